import type { InstanceRecord } from './types.js';

/** Entries of the metadata table, at least; beyond it, one per four records held (see `SharedValues`). */
export const SHARED_METADATA_MIN_ENTRIES = 1_024;
/** Distinct short strings (zones, groups, owners) kept shared; past it a new one stays the record's own. */
export const SHARED_STRINGS_MAX = 10_000;

interface SharedMetadata {
  metadata: Record<string, string>;
  /** Records of the store holding exactly this object. */
  holders: number;
  /** Its JSON: its key in `metadataByText`. */
  text: string;
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
 * Metadata objects are counted by the records holding them and dropped with the last one. The
 * table is bounded (`SHARED_METADATA_MIN_ENTRIES`, or a quarter of the records held): where
 * every instance carries a metadata map of its own (an instance id in it), new maps stay
 * private rather than growing a table that saves nothing.
 */
export class SharedValues {
  private readonly metadataByText = new Map<string, SharedMetadata>();
  /** The entry of each shared object, so that a release finds it without encoding the map again. */
  private readonly entryOf = new WeakMap<Record<string, string>, SharedMetadata>();
  private readonly strings = new Map<string, string>();

  /** Distinct metadata maps shared now (for tests and figures). */
  get metadataEntries(): number {
    return this.metadataByText.size;
  }

  /**
   * Points `record` at the shared copies of its metadata, zone, group and owner, taking a
   * hold on the metadata for it. The store owns the records it is given: they are freshly
   * built per write, so replacing a field by an equal value changes nothing anyone sees.
   * `recordsHeld` bounds the table. `previous`, the record this one replaces, lets go of its
   * hold (`release`).
   */
  adopt(record: InstanceRecord, recordsHeld: number, previous?: InstanceRecord): void {
    const data = record.data;
    record.owner = this.string(record.owner);
    data.zone = this.string(data.zone);
    if (data.group !== undefined) data.group = this.string(data.group);
    if (previous !== undefined) {
      // A new version of a stored record (a status change, a re-registration, a takeover, a
      // replicated update) most often keeps its metadata: it takes over the hold of the record
      // it replaces, without encoding either map.
      if (sameEntries(previous.data.metadata, data.metadata)) {
        data.metadata = previous.data.metadata;
        return;
      }
      this.release(previous);
    }
    const text = JSON.stringify(data.metadata);
    const shared = this.metadataByText.get(text);
    if (shared !== undefined) {
      shared.holders += 1;
      data.metadata = shared.metadata;
    } else if (this.metadataByText.size < Math.max(SHARED_METADATA_MIN_ENTRIES, recordsHeld / 4)) {
      const entry = { metadata: data.metadata, holders: 1, text };
      this.metadataByText.set(text, entry);
      this.entryOf.set(data.metadata, entry);
    }
  }

  /** Lets go of a record's hold on its metadata (it was replaced or purged). */
  release(record: InstanceRecord): void {
    const shared = this.entryOf.get(record.data.metadata);
    // A private map (the table was full when it came), or one whose entry was dropped, holds nothing.
    if (shared === undefined || shared.holders === 0) return;
    shared.holders -= 1;
    if (shared.holders === 0) {
      this.metadataByText.delete(shared.text);
      this.entryOf.delete(shared.metadata);
    }
  }

  private string(value: string): string {
    const shared = this.strings.get(value);
    if (shared !== undefined) return shared;
    if (this.strings.size < SHARED_STRINGS_MAX) this.strings.set(value, value);
    return value;
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
