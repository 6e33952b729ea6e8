import { isProtected, type ServiceEntryListing } from '../registry/queries.js';
import type { InstanceStore } from '../registry/store.js';
import { groupOf, type InstanceRecord, type StoredInstance } from '../registry/types.js';
import { leaseRemainingMs, leaseState, type LeaseView } from '../registry/visibility.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { regionOf, toInstanceView } from '../registry/view.js';
import { readsBudget, yieldToLoop } from '../http/loop-budget.js';

/**
 * The JSON of an instance view, the same bytes as `JSON.stringify(toInstanceView(entry, view))`
 * but built from parts cached per record. Listing a service serializes every instance on every
 * read, and on this machine JSON.stringify costs about 50 ns per property (25 per instance): it
 * was a third of the peer's CPU per discover (bench/cpu-per-request.ts). Most of an instance
 * only changes with its record, and a record is never changed in place (every write stores a
 * new one), so the JSON of those fields is kept per record, in a WeakMap that lets it go with
 * the record. Only the fields that move with time or with the peer's view are written per read:
 *
 *   head  "region":<dynamic>  middle  "leaseExpiresInMs":<dynamic>,"leaseLive":<dynamic>,"evictionHeld":<dynamic>  tail
 *
 * This is Eureka's idea of a response cache, at the granularity of one record, and without
 * its staleness: what is cached cannot change until the record does. Its memory is bounded by
 * `limits.listingCacheMaxBytes` (8 MB, about 15,000 instances with five metadata keys by
 * default), counted as records are cached and given back as the store replaces or purges
 * them; past it, instances are serialized on every read, as without the cache.
 */
/** What a cached record costs beyond its JSON text: the parts object, the slices, the WeakMap entry. */
const PER_RECORD_OVERHEAD_BYTES = 160;

interface Parts {
  /** What it counts against the budget. */
  bytes: number;
  /** Up to and including `"region":`. */
  head: string;
  /** From `,"owner":` up to and including `"leaseExpiresInMs":`. */
  middle: string;
  /** From `,"registeredAtMs":` to the closing brace. */
  tail: string;
}

const REGION = ',"region":';
const OWNER = ',"owner":';
const LEASE_EXPIRES = ',"leaseExpiresInMs":';
const LEASE_LIVE = ',"leaseLive":';
const REGISTERED = ',"registeredAtMs":';

/**
 * Splits the JSON of a view at its dynamic fields. Searched from the end: after `group` (the
 * last field a client writes freely) only fixed keys, peer ids, versions, numbers and booleans
 * follow, none of which can contain a quote, so the last match of each key is the field itself.
 * Null when the view's fields are not in the expected order (then every read stringifies).
 */
function splitView(json: string, bytes: number): Parts | null {
  const region = json.lastIndexOf(REGION);
  const owner = json.indexOf(OWNER, region);
  const leaseExpires = json.lastIndexOf(LEASE_EXPIRES);
  const leaseLive = json.lastIndexOf(LEASE_LIVE);
  const registered = json.lastIndexOf(REGISTERED);
  if (region < 0 || !(region < owner && owner < leaseExpires && leaseExpires < leaseLive && leaseLive < registered)) return null;
  return {
    bytes,
    head: json.slice(0, region + REGION.length),
    middle: json.slice(owner, leaseExpires + LEASE_EXPIRES.length),
    tail: json.slice(registered),
  };
}

/** The store's side of the cache: replaced and purged records give their bytes back. */
type ChangeFeed = Pick<InstanceStore, 'onChange' | 'onPurge'>;

export class InstanceJsonCache {
  private readonly parts = new WeakMap<InstanceRecord, Parts | null>();
  private bytes = 0;
  private readonly unsubscribe: (() => void)[];

  constructor(
    store: ChangeFeed,
    /** `limits.listingCacheMaxBytes`. */
    readonly maxBytes: number,
  ) {
    this.unsubscribe = [
      // A write replaces the record (`before`); a local change keeps it (its lease moved).
      store.onChange((change) => {
        if (change.kind === 'write' && change.before !== null) this.forget(change.before);
      }),
      store.onPurge((purged) => this.forget(purged.record)),
    ];
  }

  /** Bytes of parts held now (at most `maxBytes`). */
  get cachedBytes(): number {
    return this.bytes;
  }

  close(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  /**
   * The JSON of `toInstanceView(entry, view)`; a record not cached yet is cached when `keep`
   * (and the budget allows).
   */
  instanceJson(entry: StoredInstance, view: LeaseView, keep = true): string {
    const parts = this.parts.get(entry.record);
    if (parts === undefined) {
      const json = JSON.stringify(toInstanceView(entry, view));
      const bytes = json.length + PER_RECORD_OVERHEAD_BYTES;
      if (keep && this.bytes + bytes <= this.maxBytes) {
        const split = splitView(json, bytes);
        this.parts.set(entry.record, split);
        if (split) this.bytes += bytes;
      }
      return json;
    }
    if (parts === null) return JSON.stringify(toInstanceView(entry, view));
    const region = regionOf(entry, view);
    const state = leaseState(entry, view);
    return (
      parts.head +
      (region === null ? 'null' : JSON.stringify(region)) +
      parts.middle +
      leaseRemainingMs(entry, view) +
      ',"leaseLive":' +
      (state === 'live') +
      ',"evictionHeld":' +
      (state === 'held') +
      parts.tail
    );
  }

  /**
   * The JSON of `toRenewedView(entry, view, heartbeatIntervalMs)`, a register's or heartbeat's
   * answer: the view, then `heartbeatIntervalMs` (the field toRenewedView adds last). A
   * heartbeat keeps its record, so its answer comes from the parts kept for it when a listing
   * cached them; an answer caches nothing itself. Cached by every heartbeat, the budget went
   * to whichever instances heartbeated first rather than to the services that are listed, and
   * filled to its end under heartbeats alone (8 MB: about 80 B per instance of a cluster
   * peer's slope at 100,000, bench/findings.md 2026-12-07 14:38).
   */
  renewedJson(entry: StoredInstance, view: LeaseView, heartbeatIntervalMs: number): string {
    return `${this.instanceJson(entry, view, false).slice(0, -1)},"heartbeatIntervalMs":${heartbeatIntervalMs}}`;
  }

  /** The JSON of a list of instances, as JSON.stringify would write the array of their views. */
  instancesJson(entries: readonly StoredInstance[], view: LeaseView): string {
    let out = '[';
    for (let i = 0; i < entries.length; i++) out += (i === 0 ? '' : ',') + this.instanceJson(entries[i]!, view);
    return `${out}]`;
  }

  private forget(record: InstanceRecord): void {
    const parts = this.parts.get(record);
    if (parts) this.bytes -= parts.bytes;
    this.parts.delete(record);
  }
}

/** Which instances of a service a `GET /v1/services/{service}` lists. */
export interface ListingSelection {
  /** `status=all`: every status, not only UP. */
  allStatuses: boolean;
  /** The service's protect threshold (0: off). */
  protectThresholdRatio: number;
  /** Only this group's instances; null: every group. */
  group: string | null;
}

/**
 * The listing a selection answers, from a shared view: what `listServiceEntries` answers from
 * the store, as of the view's build time (`leases` gives the rules in force; its clock reading
 * is replaced by the view's).
 */
export function selectListing(view: ServiceView, selection: ListingSelection, leases: () => LeaseView): ServiceEntryListing {
  const asOf = { ...leases(), nowMs: view.builtAtMs };
  const { group } = selection;
  const live = group === null ? [...view.served] : view.served.filter((entry) => groupOf(entry.record.data) === group);
  const protectedNow = isProtected(live, asOf, selection.protectThresholdRatio);
  const shown = selection.allStatuses || protectedNow ? live : live.filter((entry) => entry.record.data.status === 'UP');
  return { namespace: view.namespace, service: view.service, revision: view.revision, protected: protectedNow, entries: shown };
}

/**
 * The encoding names of listings without a group filter, by protection threshold: made once,
 * not for every read (a new string is hashed again on each map lookup). Thresholds come from
 * the configuration only, so there are few; the bound is a guard, not a limit in use.
 */
const UNGROUPED_NAMES = new Map<number, { up: string; all: string }>();
const UNGROUPED_NAMES_MAX = 256;

/** The name a listing's bytes are kept under, per view: one per status filter, threshold and group. */
export function listingName(selection: ListingSelection): string {
  const { protectThresholdRatio: threshold, group } = selection;
  const make = (statuses: 'up' | 'all') => `v1-listing|${statuses}|${threshold}|${group ?? ''}`;
  if (group !== null) return make(selection.allStatuses ? 'all' : 'up');
  let names = UNGROUPED_NAMES.get(threshold);
  if (!names) {
    names = { up: make('up'), all: make('all') };
    if (UNGROUPED_NAMES.size < UNGROUPED_NAMES_MAX) UNGROUPED_NAMES.set(threshold, names);
  }
  return selection.allStatuses ? names.all : names.up;
}

/** A listing's encoding of one view: how often it was read, its bytes from the second read on, and its build in turns while one runs. */
interface KeptListing {
  reads: number;
  bytes: Buffer | undefined;
  building: Promise<Buffer> | undefined;
}

/**
 * Served instances past which a listing is built in slices, yielding whenever the peer's reads
 * have held the loop for their budget (src/http/loop-budget.ts), instead of in one turn: a
 * listing costs about 2.5 µs an instance to write, and one of 100,000 instances (a service
 * whose `limits.instancesPerServiceMax` was raised) held the loop for 410-660 ms after every
 * change (its view built, then written). Smaller listings are written at once, in the
 * request's turn, as the hottest read wants.
 */
export const LISTING_IN_TURNS_MIN_INSTANCES = 5_000;
/** Instances written between two looks at the budget. */
const BUDGET_CHECK_INSTANCES = 200;

/**
 * The bytes of a listing, built once per view and selection from its second read on, and then
 * shared by every reader of it (ServiceViews.encoding). A group no instance of the view has is answered without caching,
 * so that queries naming made-up groups cannot fill the cache. A listing of more than
 * `LISTING_IN_TURNS_MIN_INSTANCES` comes as a promise, built in slices, one build shared by
 * every reader that asks while it runs.
 */
export function listingBytes(
  views: ServiceViews,
  view: ServiceView,
  selection: ListingSelection,
  parts: InstanceJsonCache,
  leases: () => LeaseView,
): Buffer | Promise<Buffer> {
  const inTurns = view.served.length > LISTING_IN_TURNS_MIN_INSTANCES;
  const build = (built: ServiceView): Buffer | Promise<Buffer> => {
    const { entries, ...listing } = selectListing(built, selection, leases);
    const asOf = { ...leases(), nowMs: built.builtAtMs };
    const head = `${JSON.stringify(listing).slice(0, -1)},"instances":`;
    if (!inTurns) return Buffer.from(`${head}${parts.instancesJson(entries, asOf)}}`);
    return writeInSlices(head, entries, asOf, parts);
  };
  const { group } = selection;
  if (group !== null && !view.served.some((entry) => groupOf(entry.record.data) === group)) return build(view);
  const name = listingName(selection);
  // Kept from the second read of a view on: a service read once per change (a registry listed
  // once, say) costs no retained bytes (a 1,000-instance listing is 500 KB), while every hot
  // service is built at most twice per change and shared by all of its readers.
  const kept = views.encoding<KeptListing>(view, name, () => ({ reads: 0, bytes: undefined, building: undefined }));
  kept.reads += 1;
  if (kept.bytes !== undefined) return kept.bytes;
  if (kept.building !== undefined) return kept.building;
  const keep = kept.reads > 1;
  const built = build(view);
  if (Buffer.isBuffer(built)) {
    if (keep) kept.bytes = built;
    return built;
  }
  // Every reader asking meanwhile waits for this build; kept when a second read came by its end.
  kept.building = built
    .then((bytes) => {
      if (kept.reads > 1) kept.bytes = bytes;
      return bytes;
    })
    .finally(() => (kept.building = undefined));
  return kept.building;
}

/** `head`, the instances' JSON array and the closing brace, written in slices within the reads' budget. */
async function writeInSlices(head: string, entries: readonly StoredInstance[], asOf: LeaseView, parts: InstanceJsonCache): Promise<Buffer> {
  const chunks: Buffer[] = [Buffer.from(`${head}[`)];
  let text = '';
  for (let i = 0; i < entries.length; i++) {
    if (i % BUDGET_CHECK_INSTANCES === 0 && i > 0 && readsBudget.spent()) {
      chunks.push(Buffer.from(text));
      text = '';
      await yieldToLoop();
    }
    text += (i === 0 ? '' : ',') + parts.instanceJson(entries[i]!, asOf);
  }
  chunks.push(Buffer.from(`${text}]}`));
  return Buffer.concat(chunks);
}
