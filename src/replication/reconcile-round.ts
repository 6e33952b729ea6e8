import PQueue from 'p-queue';
import type { TurnQueue } from '../clock/turn-queue.js';
import { SUB_BUCKETS } from '../registry/digest.js';
import type { Registry } from '../registry/registry.js';
import { instanceKeyString, type StoredInstance } from '../registry/types.js';
import type { DigestEntry, ReceivedAnswer, ReconcileRequest } from '../transport/peer-calls.js';
import type { EncodedRequest } from '../transport/transport.js';
import type { Inbox } from './inbox.js';
import { encodeRoundSubBuckets, RECONCILE_PARTS_IN_FLIGHT, splitIntoParts, wantedSubBuckets } from './reconcile-parts.js';
import type { StoreScans } from './store-scans.js';
import { encodeReplicate, parseKeyString } from './wire.js';

/** What the reconcile of one round needs: this peer's side, and the calls to the other peer. */
export interface ReconcileSide {
  selfId: string;
  peerId: string;
  registry: Registry;
  inbox: Inbox;
  scans: StoreScans;
  /** Each step of a part (its listing, each slice of its answer, each push) waits for a turn of its own. */
  turns: TurnQueue;
  /** Records pushed in one `replicate` call, and applied from an answer in one turn. */
  batchMaxRecords: number;
  reconcile(request: ReconcileRequest): Promise<ReceivedAnswer<'reconcile'>>;
  replicate(push: EncodedRequest<'replicate'>): Promise<unknown>;
}

export interface ReconcileTotals {
  pulled: number;
  pushed: number;
  /** `[key, version, deleted]` entries listed, over every part. */
  entriesSent: number;
  parts: number;
}

/**
 * Reconciles the records of `subBuckets` of `buckets` with the other peer (of whole `buckets`
 * when `subBuckets` is null: a peer without `subdigest`), in parts (`splitIntoParts`), up to
 * `RECONCILE_PARTS_IN_FLIGHT` at a time. This peer's records of them are found in one pass over
 * its store; each part is one `reconcile` call, its answer applied `batchMaxRecords` a turn,
 * and the records the other peer wants pushed `batchMaxRecords` a call. No step's work grows
 * with the round (a part is at most `RECONCILE_PART_ENTRIES` entries), and the steps of the
 * parts in flight take turns (`side.turns`) rather than run back to back when their answers
 * come in together.
 *
 * A part that fails ends the round (the parts not yet sent are not sent), after the parts in
 * flight have settled; what was applied stays applied.
 */
export async function reconcileInParts(side: ReconcileSide, buckets: number[], subBuckets: number[] | null): Promise<ReconcileTotals> {
  const wholeBuckets = subBuckets === null;
  const units = subBuckets ?? buckets;
  const bucketCount = side.registry.store.digest.bucketCount;
  const wanted = wantedSubBuckets(bucketCount, new Set(buckets), wholeBuckets ? undefined : new Set(subBuckets));
  const listed = new Map<number, StoredInstance[]>();
  await side.scans.find(wanted, (entry) => {
    const unit = wholeBuckets ? Math.floor(entry.subBucket / SUB_BUCKETS) : entry.subBucket;
    const list = listed.get(unit);
    if (list === undefined) listed.set(unit, [entry]);
    else list.push(entry);
  });
  const parts = splitIntoParts(units, (unit) => listed.get(unit)?.length ?? 0, wholeBuckets ? SUB_BUCKETS : 1);
  const round = wholeBuckets ? undefined : encodeRoundSubBuckets(buckets, units);

  const totals: ReconcileTotals = { pulled: 0, pushed: 0, entriesSent: 0, parts: parts.length };
  // The parts not started yet are dropped at the first failure; those in flight settle first.
  const queue = new PQueue({ concurrency: RECONCILE_PARTS_IN_FLIGHT });
  const failures: unknown[] = [];
  for (const part of parts) {
    // Cleared inside the task, before its slot is given to the next part.
    void queue.add(async () => {
      try {
        await reconcilePart(side, { buckets, round }, part, listed, totals);
      } catch (error) {
        failures.push(error);
        queue.clear();
      }
    });
  }
  await queue.onIdle();
  if (failures.length > 0) throw failures[0];
  return totals;
}

/** One part (`units`: whole buckets without `round.round`, else sub-buckets of `round.buckets`): its `reconcile` call, the answer applied, then what the other peer wants pushed. */
async function reconcilePart(
  side: ReconcileSide,
  round: { buckets: number[]; round: string | undefined },
  units: number[],
  listed: ReadonlyMap<number, StoredInstance[]>,
  totals: ReconcileTotals,
): Promise<void> {
  await side.turns.next();
  const entries: DigestEntry[] = [];
  for (const unit of units) {
    for (const entry of listed.get(unit) ?? []) entries.push([instanceKeyString(entry.record), entry.record.version, entry.record.deleted === null ? 0 : 1]);
  }
  totals.entriesSent += entries.length;
  // With sub-buckets, the round's buckets and sub-buckets go with the part's own: the other peer
  // lists the whole round in one pass and keeps it for the other parts (round-listings.ts).
  const theirs = await side.reconcile(
    round.round === undefined
      ? { from: side.selfId, buckets: units, entries }
      : { from: side.selfId, buckets: round.buckets, subBuckets: units, round: round.round, entries },
  );
  const pulled = await applyInTurns(side, theirs.records);
  totals.pulled += pulled;

  await side.turns.next();
  const wanted: StoredInstance[] = [];
  for (const keyString of theirs.want) {
    const key = parseKeyString(keyString);
    const entry = key && side.registry.store.get(key);
    if (entry) wanted.push(entry);
  }
  // Each push encoded as it goes (the record as stored then, its lease as of then): the wire
  // copies of a large repair are never all held at once, nor across the calls.
  for (let i = 0; i < wanted.length; i += side.batchMaxRecords) {
    if (i > 0) await side.turns.next();
    await side.replicate(encodeReplicate(side.selfId, wanted.slice(i, i + side.batchMaxRecords), side.registry.leaseView(), true));
  }
  totals.pushed += wanted.length;
}

/** Applies an answer's records `batchMaxRecords` a turn; how many were newer than held. */
async function applyInTurns(side: ReconcileSide, records: readonly unknown[]): Promise<number> {
  let applied = 0;
  for (let i = 0; i < records.length; i += side.batchMaxRecords) {
    await side.turns.next();
    applied += side.inbox.apply(side.peerId, records.slice(i, i + side.batchMaxRecords), 'repair').applied;
  }
  return applied;
}
