import type { Clock, TimerHandle } from '../clock/clock.js';
import type { StoredInstance } from '../registry/types.js';
import { decodeRoundSubBuckets, wantedSubBuckets } from './reconcile-parts.js';
import type { StoreScans } from './store-scans.js';

/** Listings kept at once, all callers together; past it the oldest is dropped (it is found again if asked). */
const MAX_LISTINGS = 64;
/**
 * Listings kept per caller: a caller runs one round with a peer at a time, and a second beside
 * it when contact comes back while the first may be stuck (AntiEntropy.syncWith). Each keeps
 * its own: with one per caller, the two rounds' parts dropped each other's listing in turn,
 * and every part was a pass over the store again.
 */
const LISTINGS_PER_CALLER = 2;

/** What one pass found for one caller's round: its records by sub-bucket. */
interface Listing {
  from: string;
  /** The round's buckets, as the caller sent them. */
  key: string;
  ready: Promise<void>;
  bySub: Map<number, StoredInstance[]>;
  /** Sub-buckets already answered: asked again, they are a new round's. */
  answered: Set<number>;
  expiry: TimerHandle;
}

/**
 * The records a peer holds in the buckets of another peer's round, found in one pass over the
 * store and kept for the round's `reconcile` parts (reconcile-round.ts sends each part with
 * the round's buckets and the part's sub-buckets). Without it, each part was a pass of its
 * own: at 1,000,000 records a round of 29 parts spent 40% of both peers' CPU passing over the
 * store (bench/anti-entropy-turns.ts, profiled).
 *
 * A listing is dropped when its round is over: when the caller asks again about a sub-bucket it
 * was answered (a new round of the same buckets), when it starts a third round beside two kept
 * (the older goes), or `keepMs` after it was made. Records replaced since the pass are answered as stored now (the answer reads
 * the store again); one added since is missed, one purged since is left out: the next round
 * compares again, as it does after any scan in slices.
 */
export class RoundListings {
  /** Each caller's listings, oldest first; callers in the order their newest listing was made. */
  private readonly byCaller = new Map<string, Listing[]>();
  private count = 0;

  constructor(
    private readonly components: { clock: Clock; scans: StoreScans; bucketCount: () => number },
    private readonly keepMs: number,
  ) {}

  /**
   * This peer's records in `subBuckets` of `buckets` (in every sub-bucket of them when absent).
   * With `round` (the sub-buckets of the caller's whole round, `ReconcileRequest.round`) naming
   * every one of `subBuckets`, the pass lists the round's and keeps them for its other parts;
   * otherwise (an older caller's whole round in one call) it lists these alone, kept for none.
   */
  async entriesIn(from: string, buckets: readonly number[], subBuckets: readonly number[] | undefined, round?: string): Promise<StoredInstance[]> {
    const roundSubs = round === undefined || subBuckets === undefined ? undefined : decodeRoundSubBuckets(buckets, round);
    const roundSet = new Set(roundSubs);
    const inRound = roundSubs !== undefined && subBuckets!.every((sub) => roundSet.has(sub));
    if (!inRound) {
      const out: StoredInstance[] = [];
      const wanted = wantedSubBuckets(this.components.bucketCount(), new Set(buckets), subBuckets && new Set(subBuckets));
      await this.components.scans.find(wanted, (entry) => out.push(entry));
      return out;
    }
    const listing = this.listingFor(from, `${buckets.join(',')}/${round}`, buckets, roundSubs, subBuckets!);
    // Taken before the pass ends: the same sub-buckets asked again meanwhile (a call sent twice,
    // a second round beside the first) get a listing of their own, not what this one took.
    for (const sub of subBuckets!) listing.answered.add(sub);
    await listing.ready;
    const out: StoredInstance[] = [];
    for (const sub of subBuckets!) {
      for (const entry of listing.bySub.get(sub) ?? []) out.push(entry);
      listing.bySub.delete(sub);
    }
    return out;
  }

  /** Drops every listing (the peer is stopping). */
  clear(): void {
    for (const listings of this.byCaller.values()) for (const listing of listings) listing.expiry.cancel();
    this.byCaller.clear();
    this.count = 0;
  }

  /** The kept listing for `key` unless it answered some of `asked` already, or a new one of `listed` (sub-buckets of `buckets`). */
  private listingFor(from: string, key: string, buckets: readonly number[], listed: readonly number[], asked: readonly number[]): Listing {
    const kept = this.byCaller.get(from) ?? [];
    const same = kept.find((listing) => listing.key === key);
    if (same !== undefined && !asked.some((sub) => same.answered.has(sub))) return same;
    // A new round of the same buckets replaces the old one's listing.
    if (same !== undefined) this.drop(same);
    if ((this.byCaller.get(from)?.length ?? 0) >= LISTINGS_PER_CALLER) this.drop(this.byCaller.get(from)![0]!);
    if (this.count >= MAX_LISTINGS) this.drop(this.byCaller.values().next().value![0]!);
    const bySub = new Map<number, StoredInstance[]>();
    const { clock, scans, bucketCount } = this.components;
    const ready = scans.find(wantedSubBuckets(bucketCount(), new Set(buckets), new Set(listed)), (entry) => {
      const list = bySub.get(entry.subBucket);
      if (list === undefined) bySub.set(entry.subBucket, [entry]);
      else list.push(entry);
    });
    const listing: Listing = { from, key, ready, bySub, answered: new Set(), expiry: clock.setTimeout(() => this.drop(listing), this.keepMs) };
    const listings = this.byCaller.get(from) ?? [];
    // Moved to the end: the oldest caller's listings are the first dropped past MAX_LISTINGS.
    this.byCaller.delete(from);
    this.byCaller.set(from, [...listings, listing]);
    this.count += 1;
    return listing;
  }

  private drop(listing: Listing): void {
    listing.expiry.cancel();
    const listings = this.byCaller.get(listing.from);
    const at = listings?.indexOf(listing) ?? -1;
    if (at < 0) return;
    listings!.splice(at, 1);
    this.count -= 1;
    if (listings!.length === 0) this.byCaller.delete(listing.from);
  }
}
