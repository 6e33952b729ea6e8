import { compareVersions } from '../clock/hlc.js';
import { bucketOfSub, SUB_BUCKETS } from '../registry/digest.js';
import { instanceKeyString, type StoredInstance } from '../registry/types.js';
import type { DigestEntry } from '../transport/peer-calls.js';

/**
 * Most `[key, version, deleted]` entries one `reconcile` call lists. A round after a long
 * partition lists every record of the sub-buckets that differ (a quarter of the registry at
 * most, `antiEntropyMaxBucketsPerRound`): in one call, the request's and the answer's parse,
 * diff and encoding held a peer's event loop 64-153 ms at 70,000 entries and 268-692 ms at
 * 250,000 (bench/anti-entropy-turns.ts, 1,000,000 records). In parts of 5,000 the longest
 * delay was 19-38 ms (10,000: 27-56 ms), for the same CPU in all.
 */
export const RECONCILE_PART_ENTRIES = 5_000;

/**
 * Most sub-buckets one `reconcile` call covers, whatever this peer holds in them (a caller
 * holding nothing there lists no entry at all): 1,024 of the 65,536, about 15,000 records at
 * 1,000,000. The answer is bounded on its own side too (`RECONCILE_ANSWER_RECORDS`).
 */
export const RECONCILE_PART_SUB_BUCKETS = 1_024;

/**
 * Most records the answer to one part of a round (a `reconcile` with `round`) carries. The
 * caller lists about as many records as this peer holds in the same sub-buckets, but it may
 * hold far fewer there (a peer wiped and not caught up yet); the records past this many are
 * left to the next round, which compares again. An older caller sends its whole round in one
 * call, without `round`, and is answered whole, as it was before parts.
 */
export const RECONCILE_ANSWER_RECORDS = 20_000;

/** Parts of one round in flight at once: the other peer finds their records in one pass (`StoreScans`). */
export const RECONCILE_PARTS_IN_FLIGHT = 4;

/**
 * Splits `units` (sub-buckets, or whole buckets of `SUB_BUCKETS` sub-buckets each with a peer
 * that reconciles whole buckets) into consecutive parts of at most `RECONCILE_PART_ENTRIES`
 * listed entries (`listedIn(unit)`) and `RECONCILE_PART_SUB_BUCKETS` sub-buckets; a unit that
 * alone holds more makes a part of its own. Pure.
 */
export function splitIntoParts(units: readonly number[], listedIn: (unit: number) => number, subBucketsPerUnit: number): number[][] {
  const maxUnits = Math.max(1, Math.floor(RECONCILE_PART_SUB_BUCKETS / subBucketsPerUnit));
  const parts: number[][] = [];
  let part: number[] = [];
  let listed = 0;
  for (const unit of units) {
    const count = listedIn(unit);
    if (part.length > 0 && (part.length === maxUnits || listed + count > RECONCILE_PART_ENTRIES)) {
      parts.push(part);
      part = [];
      listed = 0;
    }
    part.push(unit);
    listed += count;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/** The sub-buckets of a round as `ReconcileRequest.round` carries them: a bit per sub-bucket of `buckets`. */
export function encodeRoundSubBuckets(buckets: readonly number[], subBuckets: Iterable<number>): string {
  const index = new Map(buckets.map((bucket, i) => [bucket, i]));
  const bits = new Uint8Array((buckets.length * SUB_BUCKETS) / 8);
  for (const sub of subBuckets) {
    const i = index.get(bucketOfSub(sub));
    if (i === undefined) continue;
    const bit = i * SUB_BUCKETS + (sub % SUB_BUCKETS);
    bits[bit >> 3]! |= 1 << (bit & 7);
  }
  return Buffer.from(bits).toString('base64');
}

/** The sub-buckets a `round` names, or undefined when it is not one bit per sub-bucket of `buckets`. */
export function decodeRoundSubBuckets(buckets: readonly number[], round: string): number[] | undefined {
  const bits = Buffer.from(round, 'base64');
  if (bits.length !== (buckets.length * SUB_BUCKETS) / 8) return undefined;
  const subs: number[] = [];
  for (let i = 0; i < buckets.length; i++) {
    for (let n = 0; n < SUB_BUCKETS; n++) {
      const bit = i * SUB_BUCKETS + n;
      if ((bits[bit >> 3]! & (1 << (bit & 7))) !== 0) subs.push(buckets[i]! * SUB_BUCKETS + n);
    }
  }
  return subs;
}

/**
 * Which keys differ between the records this peer holds in some buckets and the caller's
 * `[key, version, deleted]` entries for the same buckets. Pure.
 */
export function diffEntries(
  local: Iterable<StoredInstance>,
  remote: readonly DigestEntry[],
): { newerHere: StoredInstance[]; newerThere: string[] } {
  const remoteVersions = new Map<string, string>();
  for (const [key, version] of remote) remoteVersions.set(key, version);
  const newerHere: StoredInstance[] = [];
  const newerThere: string[] = [];
  for (const entry of local) {
    const key = instanceKeyString(entry.record);
    const theirs = remoteVersions.get(key);
    remoteVersions.delete(key);
    if (theirs === undefined) newerHere.push(entry);
    else {
      const order = compareVersions(entry.record.version, theirs);
      if (order > 0) newerHere.push(entry);
      else if (order < 0) newerThere.push(key);
    }
  }
  for (const key of remoteVersions.keys()) newerThere.push(key);
  return { newerHere, newerThere };
}

/**
 * The sub-buckets a reconcile lists, one byte each (1: listed): those of `buckets` and, when
 * given, only those also in `subBuckets`. A scan then asks one array per record instead of two
 * `Set`s: at 1,000,000 records 12-22 ms against 46-50 ms (`npx tsx bench/registry-passes.ts`,
 * 2026-12-05). Numbers out of the digest's range (a peer's request may carry any) list nothing.
 */
export function wantedSubBuckets(bucketCount: number, buckets: ReadonlySet<number>, subBuckets?: ReadonlySet<number>): Uint8Array {
  const wanted = new Uint8Array(bucketCount * SUB_BUCKETS);
  const inRange = (n: number, size: number) => Number.isInteger(n) && n >= 0 && n < size;
  if (subBuckets === undefined) {
    for (const bucket of buckets) if (inRange(bucket, bucketCount)) wanted.fill(1, bucket * SUB_BUCKETS, (bucket + 1) * SUB_BUCKETS);
  } else {
    for (const sub of subBuckets) if (inRange(sub, wanted.length) && buckets.has(bucketOfSub(sub))) wanted[sub] = 1;
  }
  return wanted;
}
