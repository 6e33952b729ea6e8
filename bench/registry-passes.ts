/**
 * What a peer of N instances (default 1,000,000) spends, in process, on six passes that go
 * over the whole store, each with the figure it is set against in the same run:
 *
 *   - reconcile scan: finding the records of the differing sub-buckets (one pass over the
 *     store, src/replication/anti-entropy.ts) asking two `Set`s per record, against the one
 *     byte array per record it asks now (`wantedSubBuckets`); 11 of 12 buckets differing, one
 *     sub-bucket in 26 of those; and the same scan through `StoreScans` (what anti-entropy runs,
 *     stepped by `StoreWalk`) against the inline loop;
 *   - hides: a reaper `runOnce` when a tenth of the instances belong to an owner down past its
 *     grace (under the partition guard's share), against `runOnce` again with nothing to do
 *     (the scan alone); silent logger;
 *   - owner down: `registry.ownerDown` for an owner of a quarter of the instances (one pass
 *     over the store, its instances' grace leases, in turns of `OWNER_PASS_SLICE_ENTRIES`),
 *     three owners in turn: the longest turn, against all its turns together;
 *   - holds: a timer-driven reaper run (its scan in slices) when a tenth of the instances, this
 *     peer's own, expired while the other peers are asked about them, deciding in turns of
 *     `DECIDE_MAX_PER_TURN` and flagging them held in turns of `HOLD_MAX_PER_TURN` (its longest
 *     turn), against the same run making every decision in one turn (two rounds), and against
 *     the same run doing everything in one turn;
 *   - evictions: a timer-driven reaper run on a peer alone when a tenth of the instances, its
 *     own, expired, deciding in turns and evicting what the caps allow in turns of
 *     `EVICT_MAX_PER_TURN` (the longest turn), against the same run making every decision in one
 *     turn, and doing everything in one turn, each on a registry of its own;
 *   - `/v1/cluster`: its count of the served instances, in slices (the longest turn), against
 *     the count in one piece it made before (`liveInstances` over every entry), three rounds.
 *
 * Milliseconds of one turn of the event loop each (timed with performance.now()), but for the
 * owner-down reference.
 *   npx tsx bench/registry-passes.ts [--instances=1000000] [--passes=4,5]
 */
import { clusterStatus } from '../src/cluster-status.js';
import { yieldToLoop } from '../src/http/loop-budget.js';
import type { MembershipView } from '../src/lease/lease-scan.js';
import type { ExpiryCheck, Reaper, ReaperInit } from '../src/lease/reaper.js';
import { silentLogger } from '../src/log/logger.js';
import { bucketOfSub, SUB_BUCKETS } from '../src/registry/digest.js';
import { liveInstances } from '../src/registry/queries.js';
import type { StoredInstance } from '../src/registry/types.js';
import { LeaseCheck } from '../src/replication/lease-check.js';
import type { PeerTransport } from '../src/transport/transport.js';
import { wantedSubBuckets } from '../src/replication/reconcile-parts.js';
import { StoreScans } from '../src/replication/store-scans.js';
import type { RegistryNode } from '../src/node.js';
import type { FakeClock } from '../test/support/fake-clock.js';
import { createTestNode } from '../test/support/node.js';
import { reaperFor } from '../test/support/reaper.js';
import { record } from '../test/support/records.js';
import { round, table } from './lib.js';

const N = Number(process.argv.find((arg) => arg.startsWith('--instances='))?.slice('--instances='.length) ?? 1_000_000);
/** Which of the six passes run (all by default). */
const PASSES = new Set((process.argv.find((arg) => arg.startsWith('--passes='))?.slice('--passes='.length) ?? '1,2,3,4,5,6').split(',').map(Number));
const METADATA = { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' };
const timed = (work: () => void): number => {
  const startedMs = performance.now();
  work();
  return round(performance.now() - startedMs, 1);
};

/** A node holding N replicated instances over 1,000 services, owned by `ownerOf(i)`. */
async function filled(ownerOf: (i: number, self: string) => string) {
  const { node, clock } = await createTestNode({ start: false });
  for (let i = 0; i < N; i++) {
    const data = { host: '10.0.0.2', port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: METADATA };
    node.registry.applyRemote(record({ service: `svc-${i % 1_000}`, instanceId: `i-${i}`, peerId: ownerOf(i, node.registry.peerId), wallMs: clock.nowMs(), data, leaseDurationMs: 30_000 }), 30_000);
  }
  return { node, clock };
}

/**
 * Times every timer callback of `clock` from now on (the reaper's tick, its slices and its
 * turns; an owner pass's turns): the array they push their ms into, which a caller may empty.
 */
function timeTurns(clock: FakeClock): number[] {
  const turnsMs: number[] = [];
  const schedule = clock.setTimeout.bind(clock);
  const every = clock.setInterval.bind(clock);
  clock.setTimeout = (fn, delayMs) => schedule(() => turnsMs.push(timed(fn)), delayMs);
  clock.setInterval = (fn, periodMs) => every(() => turnsMs.push(timed(fn)), periodMs);
  return turnsMs;
}

/** A reaper of `node` on `clock`, ticking every second, with the node's lease settings and `init` on top. */
const reaperOf = (node: RegistryNode, clock: FakeClock, membership: MembershipView, init: Partial<ReaperInit> = {}, expiryCheck?: ExpiryCheck): Reaper =>
  reaperFor(node, clock, membership, { evictionIntervalMs: 1_000, ...init }, expiryCheck ? { expiryCheck } : {});

const rows: Record<string, string | number>[] = [];

// 1. The reconcile scan, both ways, three rounds.
if (PASSES.has(1)) {
  const { node } = await filled(() => 'peer-b');
  const { digest } = node.registry.store;
  const buckets = new Set<number>();
  for (let b = 0; b < digest.bucketCount; b++) if (b % 12 !== 0) buckets.add(b);
  const subBuckets = new Set<number>();
  for (let s = 0; s < digest.bucketCount * SUB_BUCKETS; s++) if (buckets.has(bucketOfSub(s)) && s % 26 === 0) subBuckets.add(s);
  for (let r = 0; r < 3; r++) {
    let sets = 0;
    let bytes = 0;
    const setsMs = timed(() => {
      for (const service of node.registry.store.allServices()) for (const entry of service.instances.values()) if (buckets.has(bucketOfSub(entry.subBucket)) && subBuckets.has(entry.subBucket)) sets += 1;
    });
    const bytesMs = timed(() => {
      const wanted = wantedSubBuckets(digest.bucketCount, buckets, subBuckets);
      for (const service of node.registry.store.allServices()) for (const entry of service.instances.values()) if (wanted[entry.subBucket] === 1) bytes += 1;
    });
    if (sets !== bytes) throw new Error(`the two scans found ${sets} and ${bytes} records`);
    rows.push({ pass: `reconcile scan, round ${r + 1}`, 'ms now': bytesMs, 'ms reference': setsMs, reference: 'two Sets per record', records: sets });
    // What anti-entropy runs: the same scan through StoreScans, its slices stepped by StoreWalk
    // (yields that resolve at once, so the figure is the pass's own work), against the inline loop.
    let scanned = 0;
    const scans = new StoreScans(node.registry.store, () => Promise.resolve());
    const startedMs = performance.now();
    await scans.find(wantedSubBuckets(digest.bucketCount, buckets, subBuckets), () => (scanned += 1));
    const scansMs = round(performance.now() - startedMs, 1);
    if (scanned !== bytes) throw new Error(`StoreScans found ${scanned} records, the loop ${bytes}`);
    rows.push({ pass: `reconcile scan through StoreScans, round ${r + 1}`, 'ms now': scansMs, 'ms reference': bytesMs, reference: 'the same scan as one inline loop', records: scanned });
  }
  await node.stop();
}

// 2. Hides of an owner down past its grace, then the scan alone.
if (PASSES.has(2)) {
  const { node, clock } = await filled((i) => (i % 10 === 0 ? 'peer-b' : 'peer-c'));
  const down = new Map<string, number>([['peer-b', clock.nowMs()]]);
  const membership = {
    isUp: (id: string) => !down.has(id),
    downSinceMs: (id: string) => down.get(id) ?? null,
    livePeerIds: () => [node.registry.peerId, 'peer-b', 'peer-c', 'peer-d'].filter((id) => !down.has(id)),
  };
  const { cluster } = node.config;
  const reaper = reaperOf(node, clock, membership);
  // Past the lease and the grace, with a margin.
  clock.jump(30_000 + cluster.ownerDownGraceMs + 60_000);
  let hidden = 0;
  const hideMs = timed(() => (hidden = reaper.runOnce().hidden));
  const scanMs = timed(() => reaper.runOnce());
  rows.push({ pass: 'reaper run hiding a down owner\'s instances', 'ms now': hideMs, 'ms reference': scanMs, reference: 'the same run with nothing to do', records: hidden });
  await node.stop();
}

// 3. An owner going down: its instances' grace leases, in turns (src/registry/owner-passes.ts).
if (PASSES.has(3)) {
  const owners = ['peer-b', 'peer-c', 'peer-d', 'peer-e'];
  const { node, clock } = await filled((i) => owners[i % owners.length]!);
  // Each later turn of a pass is a timer of the (fake) clock: timed as it runs.
  const turnsMs = timeTurns(clock);
  for (const owner of owners.slice(0, 3)) {
    turnsMs.length = 0;
    turnsMs.push(timed(() => node.registry.ownerDown(owner)));
    await clock.advance(0);
    if (node.registry.graceUnderway(owner)) throw new Error(`the pass for ${owner} did not end`);
    const wholeMs = round(turnsMs.reduce((sum, ms) => sum + ms, 0), 1);
    rows.push({ pass: `registry.ownerDown(${owner}): longest of ${turnsMs.length} turns`, 'ms now': Math.max(...turnsMs), 'ms reference': wholeMs, reference: 'all its turns together', records: N / owners.length });
  }
  await node.stop();
}

/** A timer-driven run's bounds per turn: the defaults; every decision in one turn; everything in one turn. */
const ONE_TURN = Number.MAX_SAFE_INTEGER;
const DECISIONS_IN_ONE_TURN: Partial<ReaperInit> = { decisionsPerTurn: ONE_TURN };
const ALL_IN_ONE_TURN: Partial<ReaperInit> = { decisionsPerTurn: ONE_TURN, holdsPerTurn: ONE_TURN, evictionsPerTurn: ONE_TURN };

// 4. A tenth of the instances, this peer's own, expired while the other peers are asked about
//    them (the real lease check; they never answer): a timer-driven run (its scan in slices)
//    deciding and flagging them held in turns, against the same run deciding in one turn, and
//    doing everything in one turn.
if (PASSES.has(4)) {
  const { node, clock } = await filled((i, self) => (i % 10 === 0 ? self : 'peer-c'));
  const membership = {
    isUp: () => true,
    downSinceMs: () => null,
    livePeerIds: () => [node.registry.peerId, 'peer-b', 'peer-c'],
  };
  // The real lease check, asking two peers that never answer (the calls stay pending).
  const pending: PeerTransport = { call: () => new Promise(() => undefined) };
  const peers = ['peer-b', 'peer-c'].map((id) => ({ id, url: `http://${id}.invalid`, region: 'sim', zone: 'z' }));
  const leaseCheck = () =>
    new LeaseCheck(
      { transport: pending, inbox: node.inbox, logger: silentLogger, livePeers: () => peers, reportContact: () => undefined },
      { selfId: node.registry.peerId, callTimeoutMs: 60_000, batchMaxEntries: 1_000 },
    );
  const turnsMs = timeTurns(clock);
  clock.jump(30_000 + 60_000);
  const own: StoredInstance[] = [];
  for (const entry of node.store.entries()) if (entry.record.owner === node.registry.peerId) own.push(entry);
  /** The longest turn of one timer-driven run with bounds `init`, and how many turns. */
  const run = async (init: Partial<ReaperInit>): Promise<{ longestMs: number; turns: number; checking: number }> => {
    for (const entry of own) node.store.updateLease(entry, { held: false }, false);
    const reaper = reaperOf(node, clock, membership, init, leaseCheck());
    turnsMs.length = 0;
    reaper.start();
    await clock.advance(1_000);
    reaper.stop();
    if (own.some((entry) => !entry.held)) throw new Error('not every expired instance was flagged held');
    return { longestMs: Math.max(...turnsMs), turns: turnsMs.length, checking: reaper.lastRun?.checking ?? 0 };
  };
  const pass = "reaper run holding this peer's expired instances";
  for (let r = 0; r < 2; r++) {
    const inTurns = await run({});
    const decisionsInOne = await run(DECISIONS_IN_ONE_TURN);
    rows.push({ pass: `${pass}: longest of ${inTurns.turns} turns (${decisionsInOne.turns})`, 'ms now': inTurns.longestMs, 'ms reference': decisionsInOne.longestMs, reference: 'the same run deciding in one turn', records: inTurns.checking });
  }
  const inTurns = await run({});
  const allInOne = await run(ALL_IN_ONE_TURN);
  rows.push({ pass: `${pass}: longest of ${inTurns.turns} turns (${allInOne.turns})`, 'ms now': inTurns.longestMs, 'ms reference': allInOne.longestMs, reference: 'the same run doing all in one turn', records: inTurns.checking });
  await node.stop();
}

// 5. A tenth of the instances, this peer's own, expired on a peer alone: a timer-driven run
//    deciding and evicting what its caps allow in turns, against the same run deciding in one
//    turn, and doing all in one turn (each on a registry of its own: an eviction cannot be
//    undone).
if (PASSES.has(5)) {
  const evictionRun = async (init: Partial<ReaperInit>): Promise<{ longestMs: number; turns: number; evicted: number }> => {
    const { node, clock } = await filled((i, self) => (i % 10 === 0 ? self : 'peer-c'));
    const membership = { isUp: () => true, downSinceMs: () => null, livePeerIds: () => [node.registry.peerId] };
    const turnsMs = timeTurns(clock);
    const reaper = reaperOf(node, clock, membership, init);
    clock.jump(30_000 + 60_000);
    reaper.start();
    await clock.advance(1_000);
    reaper.stop();
    const evicted = reaper.lastRun?.evicted ?? 0;
    await node.stop();
    return { longestMs: Math.max(...turnsMs), turns: turnsMs.length, evicted };
  };
  const pass = "reaper run evicting this peer's expired instances";
  const inTurns = await evictionRun({});
  for (const [reference, init] of [['the same run deciding in one turn', DECISIONS_IN_ONE_TURN], ['the same run doing all in one turn', ALL_IN_ONE_TURN]] as const) {
    const other = await evictionRun(init);
    rows.push({ pass: `${pass}: longest of ${inTurns.turns} turns (${other.turns})`, 'ms now': inTurns.longestMs, 'ms reference': other.longestMs, reference, records: inTurns.evicted });
  }
}

// 6. /v1/cluster's count of the served instances: in slices, against the count in one piece.
if (PASSES.has(6)) {
  const { node } = await filled(() => 'peer-b');
  for (let r = 0; r < 3; r++) {
    let sliceStartMs = performance.now();
    let longestMs = 0;
    const status = await clusterStatus(node, async () => {
      longestMs = Math.max(longestMs, performance.now() - sliceStartMs);
      await yieldToLoop();
      sliceStartMs = performance.now();
    });
    longestMs = Math.max(longestMs, performance.now() - sliceStartMs);
    let counted = 0;
    const wholeMs = timed(() => (counted = liveInstances(node.store.entries(), node.registry.leaseView()).length));
    if (counted !== status.self.instances) throw new Error(`the two counts found ${status.self.instances} and ${counted}`);
    rows.push({ pass: `/v1/cluster's count of served instances, round ${r + 1}: longest turn`, 'ms now': round(longestMs, 1), 'ms reference': wholeMs, reference: 'the count in one piece', records: counted });
  }
  await node.stop();
}

console.log(`${N.toLocaleString('en')} instances, in process (${new Date().toISOString()})\n${table(rows)}`);
