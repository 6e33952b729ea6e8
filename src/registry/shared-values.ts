import type { InstanceRecord } from './types.js';

/** Entries of the metadata table, at least; beyond it, one per four records held (see `SharedValues`). */
export const SHARED_METADATA_MIN_ENTRIES = 1_024;
/**
 * Distinct strings (zones, groups, owners) kept shared, at least; beyond it, one per four records
 * held. Past the bound a new one stays the record's own.
 */
export const SHARED_STRINGS_MIN_ENTRIES = 10_000;

interface SharedMetadata {
  metadata: Record<string, string>;
  /** Records of the store holding exactly this object. */
  holders: number;
  /** Its JSON: its key in `metadataByText`. */
  text: string;
}

interface SharedString {
  value: string;
  /** Fields of the store's records (owner, zone, group) holding an equal string. */
  holders: number;
}

/**
 * One object per distinct metadata map and one string per distinct zone, group and owner,
 * shared by every record that holds an equal one. A record parsed from a request or a peer's
 * batch brings its own copies: five metadata keys cost a 64-byte object per instance, and a
 * zone or owner longer than V8's internalised JSON strings (10 characters) 32 bytes more,
 * although most instances of a registry carry the same few maps and names. Sharing is
 * invisible to readers (the shared object is equal, key order included, and nothing mutates
 * stored metadata).
 *
 * Metadata objects and strings are counted by the records holding them and dropped with the
 * last one, so a registry whose zones, groups or owners come and go (peers replaced, zones
 * renamed) keeps only those its records hold now. The tables are bounded
 * (`SHARED_METADATA_MIN_ENTRIES` and `SHARED_STRINGS_MIN_ENTRIES`, or a quarter of the records
 * held): where every instance carries a metadata map or a zone of its own, new ones stay
 * private rather than growing a table that saves nothing.
 *
 * A string is counted by its content (a string has no identity to tell a shared copy from an
 * equal private one): a record that kept a private copy while the table was full, released
 * after an equal string was shared, takes one hold too many off it. That can only drop the
 * entry early (an equal string is shared again from the next record on), never change a value.
 */
export class SharedValues {
  private readonly metadataByText = new Map<string, SharedMetadata>();
  /** The entry of each shared object, so that a release finds it without encoding the map again. */
  private readonly entryOf = new WeakMap<Record<string, string>, SharedMetadata>();
  private readonly strings = new Map<string, SharedString>();
  /**
   * The entry the last new record's metadata was found in or added as: registrations come in
   * runs of one map (a client's instances, one service's batch from a peer), and a map equal to
   * it is shared without its JSON being made and looked up (a third of `adopt`'s cost).
   */
  private lastShared: SharedMetadata | undefined;

  /** Distinct metadata maps shared now (for tests and figures). */
  get metadataEntries(): number {
    return this.metadataByText.size;
  }

  /** Distinct zones, groups and owners shared now (for tests and figures). */
  get stringEntries(): number {
    return this.strings.size;
  }

  /**
   * Points `record` at the shared copies of its metadata, zone, group and owner, taking a
   * hold on each for it. The store owns the records it is given: they are freshly built per
   * write, so replacing a field by an equal value changes nothing anyone sees. `recordsHeld`
   * bounds the tables. `previous`, the record this one replaces, lets go of its holds; a value
   * equal to the previous one takes over its hold (most new versions keep their owner, zone,
   * group and metadata), without a table lookup.
   */
  adopt(record: InstanceRecord, recordsHeld: number, previous?: InstanceRecord): void {
    const data = record.data;
    record.owner = this.swap(record.owner, recordsHeld, previous?.owner)!;
    data.zone = this.swap(data.zone, recordsHeld, previous?.data.zone)!;
    if (data.group !== undefined || previous?.data.group !== undefined) {
      const group = this.swap(data.group, recordsHeld, previous?.data.group);
      // Only set when present: an absent group stays absent (no `group: undefined` field).
      if (group !== undefined) data.group = group;
    }
    if (previous !== undefined) {
      // Likewise the metadata, without encoding either map.
      if (sameEntries(previous.data.metadata, data.metadata)) {
        data.metadata = previous.data.metadata;
        return;
      }
      this.releaseMetadata(previous);
    }
    const last = this.lastShared;
    // An entry with holders is still in the table (it leaves with its last holder).
    if (last !== undefined && last.holders > 0 && sameEntries(last.metadata, data.metadata)) {
      last.holders += 1;
      data.metadata = last.metadata;
      return;
    }
    const text = JSON.stringify(data.metadata);
    const shared = this.metadataByText.get(text);
    if (shared !== undefined) {
      shared.holders += 1;
      data.metadata = shared.metadata;
      this.lastShared = shared;
    } else if (this.metadataByText.size < Math.max(SHARED_METADATA_MIN_ENTRIES, recordsHeld / 4)) {
      const entry = { metadata: data.metadata, holders: 1, text };
      this.metadataByText.set(text, entry);
      this.entryOf.set(data.metadata, entry);
      this.lastShared = entry;
    }
  }

  /** Lets go of a record's holds on its metadata and strings (it was purged). */
  release(record: InstanceRecord): void {
    this.drop(record.owner);
    this.drop(record.data.zone);
    if (record.data.group !== undefined) this.drop(record.data.group);
    this.releaseMetadata(record);
  }

  private releaseMetadata(record: InstanceRecord): void {
    const shared = this.entryOf.get(record.data.metadata);
    // A private map (the table was full when it came), or one whose entry was dropped, holds nothing.
    if (shared === undefined || shared.holders === 0) return;
    shared.holders -= 1;
    if (shared.holders === 0) {
      this.metadataByText.delete(shared.text);
      this.entryOf.delete(shared.metadata);
    }
  }

  /** The string to store for `value` where a record held `previous`: the shared one, holds moved. */
  private swap(value: string | undefined, recordsHeld: number, previous: string | undefined): string | undefined {
    if (value === previous) return previous;
    if (previous !== undefined) this.drop(previous);
    return value === undefined ? undefined : this.take(value, recordsHeld);
  }

  /** The shared string equal to `value`, with a hold taken on it (`value` itself past the bound). */
  private take(value: string, recordsHeld: number): string {
    const shared = this.strings.get(value);
    if (shared !== undefined) {
      shared.holders += 1;
      return shared.value;
    }
    if (this.strings.size < Math.max(SHARED_STRINGS_MIN_ENTRIES, recordsHeld / 4)) this.strings.set(value, { value, holders: 1 });
    return value;
  }

  private drop(value: string): void {
    const shared = this.strings.get(value);
    if (shared === undefined) return;
    shared.holders -= 1;
    if (shared.holders <= 0) this.strings.delete(value);
  }
}

/** Same keys in the same order with the same values (what makes their JSON the same). */
function sameEntries(a: Record<string, string>, b: Record<string, string>): boolean {
  if (a === b) return true;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i]!;
    if (key !== keysB[i] || a[key] !== b[key]) return false;
  }
  return true;
}
