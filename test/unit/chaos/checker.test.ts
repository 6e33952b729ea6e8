import { describe, expect, it } from 'vitest';
import { checkHistory, InstanceTimeline, type PropertyName } from '../../../chaos/checker.js';
import type { ClientOp, FaultInterval, History, Observation, ServedInstance } from '../../../chaos/history.js';
import { formatVerdict } from '../../../chaos/report.js';

// Hand-written histories: one instance `svc/i-1` with a 3 s lease, heartbeating every second
// on peer-a, three peers, a partition, a final phase. Each bad history breaks one promise.

const T0 = 1_700_000_000_000;
const LEASE = 3_000;
const PEERS = ['peer-a', 'peer-b', 'peer-c'];
const KEY = 'svc/i-1';
const v = (ms: number, peer = 'peer-a') => `${ms.toString(16).padStart(12, '0')}.000000.${peer}`;
const V1 = v(T0 + 100);

function op(kind: ClientOp['kind'], atMs: number, extra: Partial<ClientOp> = {}): ClientOp {
  return {
    kind,
    key: KEY,
    peer: 'peer-a',
    incarnation: 1,
    sentAtMs: T0 + atMs,
    doneAtMs: T0 + atMs + 5,
    outcome: 'ok',
    httpStatus: 200,
    ...(kind === 'register' ? { leaseDurationMs: LEASE, version: V1, httpStatus: 201 } : {}),
    ...extra,
  };
}

/** Register at 100 ms, then a heartbeat every second until `untilMs`. */
function heartbeating(untilMs: number, extra: Partial<ClientOp> = {}): ClientOp[] {
  const ops = [op('register', 100, extra)];
  for (let at = 1_100; at <= untilMs; at += 1_000) ops.push(op('heartbeat', at, extra));
  return ops;
}

const served = (version = V1, held = false): ServedInstance => ({ version, status: 'UP', held });

/** A poll of every peer every 500 ms from `fromMs` to `toMs`, all serving the instance. */
function polls(fromMs: number, toMs: number, peers = PEERS): Observation[] {
  const out: Observation[] = [];
  let round = 0;
  for (let at = fromMs; at <= toMs; at += 500) {
    round += 1;
    for (const peer of peers) {
      out.push({ peer, incarnation: 1, round, sentAtMs: T0 + at, doneAtMs: T0 + at + 3, changes: at === fromMs ? { [KEY]: served() } : {} });
    }
  }
  return out;
}

const partition: FaultInterval = {
  kind: 'partition',
  startedAtMs: T0 + 2_000,
  endedAtMs: T0 + 6_000,
  sides: [['peer-a'], ['peer-b', 'peer-c']],
  detail: 'blackhole',
};

/** Writes on both sides of the partition (another instance's status changes). */
const sideWrites: ClientOp[] = [
  op('status', 3_000, { key: 'svc/other', peer: 'peer-a', status: 'DOWN', version: v(T0 + 3_000) }),
  op('status', 3_500, { key: 'svc/other', peer: 'peer-b', status: 'UP', version: v(T0 + 3_500, 'peer-b') }),
];

function goodHistory(): History {
  return {
    seed: 42,
    peers: PEERS,
    startedAtMs: T0,
    endedAtMs: T0 + 10_000,
    settings: { convergenceTargetMs: 5_000, leaseSlackMs: 50, replicationAllowanceMs: 1_000 },
    ops: [...heartbeating(9_100), ...sideWrites.map((o) => ({ ...o }))],
    abandoned: [],
    runs: PEERS.map((peer) => ({ peer, incarnation: 1, startedAtMs: T0 - 1_000, readyAtMs: T0 - 900, endedAtMs: null, endedBy: null, dataDir: 'none' })),
    faults: [partition],
    observations: polls(200, 8_700),
    final: {
      lastHealAtMs: T0 + 6_000,
      quiescedAtMs: T0 + 6_000,
      rounds: [{ atMs: T0 + 7_000, doneAtMs: T0 + 7_010, perPeer: Object.fromEntries(PEERS.map((peer) => [peer, { [KEY]: V1 }])) }],
    },
  };
}

/** The properties a history violates. */
function broken(history: History): PropertyName[] {
  return [...new Set(checkHistory(history).violations.map((violation) => violation.property))].sort();
}

/** Drops the instance from every poll of `peer` from `atMs` on. */
function vanishOn(history: History, peer: string, atMs: number): History {
  const first = history.observations.find((o) => o.peer === peer && o.sentAtMs >= T0 + atMs)!;
  first.changes = { ...first.changes, [KEY]: null };
  return history;
}

describe('the chaos history checker', () => {
  it('passes a history that keeps every promise', () => {
    const result = checkHistory(goodHistory());
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.figures.convergedAfterMs).toBe(1_010);
    expect(result.figures.callsAnswered).toBe(result.figures.callsToLivePeers);
  });

  it('catches a heartbeating instance that a peer stopped serving during a partition', () => {
    const history = vanishOn(goodHistory(), 'peer-b', 4_000);
    expect(broken(history)).toEqual(['no-eviction']);
    const text = formatVerdict(history, checkHistory(history));
    expect(text).toContain('FAIL');
    expect(text).toContain('seed 42');
    expect(text).toContain('peer-b#1: gone');
    expect(text).toContain('partition [peer-a] | [peer-b peer-c]');
  });

  it('does not flag an instance that vanished after its client stopped heartbeating', () => {
    const history = goodHistory();
    history.ops = [...heartbeating(4_100), ...sideWrites];
    history.abandoned = [{ key: KEY, atMs: T0 + 4_200 }];
    vanishOn(history, 'peer-b', 7_500);
    history.final.rounds[0]!.perPeer = Object.fromEntries(PEERS.map((peer) => [peer, {}]));
    expect(broken(history)).toEqual([]);
  });

  it('does not flag an instance whose heartbeats had a gap longer than its lease', () => {
    const history = goodHistory();
    // Heartbeats at 1.1 s and 2.1 s, then the next one answered only at 5.8 s: the lease may have run out.
    history.ops = [op('register', 100), op('heartbeat', 1_100), op('heartbeat', 2_100), op('heartbeat', 5_000, { doneAtMs: T0 + 5_800 }), ...sideWrites];
    vanishOn(history, 'peer-b', 5_500);
    history.final.rounds[0]!.perPeer = Object.fromEntries(PEERS.map((peer) => [peer, {}]));
    expect(broken(history)).toEqual([]);
  });

  it('never flags an instance held by an eviction guard: it is still served', () => {
    const history = goodHistory();
    history.ops = [...heartbeating(3_100), ...sideWrites];
    history.abandoned = [{ key: KEY, atMs: T0 + 3_200 }];
    const later = history.observations.find((o) => o.peer === 'peer-b' && o.sentAtMs >= T0 + 7_000)!;
    later.changes = { [KEY]: served(V1, true) };
    expect(broken(history)).toEqual([]);
    expect(checkHistory(history).figures.heldSeen).toBe(1);
  });

  it('catches a 404 to the heartbeat of a live instance from a peer that had acknowledged it', () => {
    const history = goodHistory();
    history.ops.push(op('heartbeat', 5_300, { outcome: 'not-found', httpStatus: 404 }));
    expect(broken(history)).toEqual(['no-eviction']);
  });

  it('accepts a 404 from a peer that never knew the instance', () => {
    const history = goodHistory();
    history.ops.push(op('heartbeat', 5_300, { peer: 'peer-c', outcome: 'not-found', httpStatus: 404 }));
    expect(broken(history)).toEqual([]);
  });

  describe('cancels', () => {
    /** Cancelled on peer-a at 3.1 s: peer-a stops serving it at once, the other side of the partition later. */
    function cancelled(): History {
      const history = goodHistory();
      history.ops = [...heartbeating(2_100), op('cancel', 3_100, { version: v(T0 + 3_100) }), ...sideWrites];
      for (const observation of history.observations) {
        const goneInRound = observation.peer === 'peer-a' ? 7 : 9;
        if (observation.round === goneInRound) observation.changes = { [KEY]: null };
      }
      history.final.rounds[0]!.perPeer = Object.fromEntries(PEERS.map((peer) => [peer, {}]));
      return history;
    }

    it('pass when the instance is gone everywhere afterwards', () => {
      expect(broken(cancelled())).toEqual([]);
    });

    it('accept another peer serving the older version before the cancel reaches it', () => {
      const history = cancelled();
      expect(history.observations.some((o) => o.peer === 'peer-b' && o.sentAtMs > T0 + 3_105 && o.round < 9)).toBe(true);
      expect(broken(history)).toEqual([]);
    });

    it('catch the cancelling peer serving it after the acknowledgement', () => {
      const history = cancelled();
      for (const observation of history.observations) {
        if (observation.peer === 'peer-a' && observation.round === 7) observation.changes = {};
        if (observation.peer === 'peer-a' && observation.round === 9) observation.changes = { [KEY]: null };
      }
      expect(broken(history)).toEqual(['cancel-stays']);
    });

    it('catch any peer serving a version newer than the cancel', () => {
      const history = cancelled();
      history.observations.find((o) => o.peer === 'peer-c' && o.round === 10)!.changes = { [KEY]: served(v(T0 + 4_000, 'peer-c')) };
      expect(broken(history)).toEqual(['cancel-stays']);
    });

    it('catch a cancelled instance left on a peer at the end', () => {
      const history = cancelled();
      history.final.rounds[0]!.perPeer['peer-c'] = { [KEY]: V1 };
      expect(broken(history)).toContain('cancel-stays');
    });
  });

  describe('the final phase', () => {
    it('fails when the peers agree only after the target', () => {
      const history = goodHistory();
      history.final.rounds = [
        { atMs: T0 + 7_000, doneAtMs: T0 + 7_010, perPeer: { 'peer-a': { [KEY]: V1 }, 'peer-b': { [KEY]: V1 }, 'peer-c': {} } },
        { atMs: T0 + 12_000, doneAtMs: T0 + 12_010, perPeer: Object.fromEntries(PEERS.map((peer) => [peer, { [KEY]: V1 }])) },
      ];
      expect(broken(history)).toEqual(['convergence']);
    });

    it('fails when the peers never agree, and says where they differ', () => {
      const history = goodHistory();
      history.final.rounds[0]!.perPeer['peer-c'] = {};
      const result = checkHistory(history);
      expect(broken(history)).toEqual(['convergence', 'presence']);
      expect(result.violations.find((x) => x.property === 'convergence')!.message).toContain('peer-c differs from peer-a on 1 (svc/i-1)');
    });

    it('fails when the peers agree on a set without a live instance', () => {
      const history = goodHistory();
      history.final.rounds[0]!.perPeer = Object.fromEntries(PEERS.map((peer) => [peer, {}]));
      expect(broken(history)).toEqual(['presence']);
    });

    it('fails when a peer does not answer', () => {
      const history = goodHistory();
      delete history.final.rounds[0]!.perPeer['peer-b'];
      expect(broken(history)).toEqual(['convergence', 'presence']);
    });
  });

  describe('availability', () => {
    it('fails when a call to a running peer is not answered', () => {
      const history = goodHistory();
      history.ops.push(op('status', 4_000, { key: 'svc/other', peer: 'peer-b', outcome: 'failed', error: 'timeout', httpStatus: undefined }));
      expect(broken(history)).toEqual(['availability']);
    });

    it('accepts a call that failed because its peer was killed meanwhile', () => {
      const history = goodHistory();
      history.runs[2] = { ...history.runs[2]!, endedAtMs: T0 + 4_002, endedBy: 'kill' };
      history.runs.push({ peer: 'peer-c', incarnation: 2, startedAtMs: T0 + 5_000, readyAtMs: T0 + 5_200, endedAtMs: null, endedBy: null, dataDir: 'none' });
      history.ops.push(op('status', 4_000, { key: 'svc/other', peer: 'peer-c', outcome: 'failed', error: 'ECONNRESET', httpStatus: undefined }));
      expect(broken(history)).toEqual([]);
    });

    it('does not count a call to a restarted peer still syncing (it may refuse with 503 by design)', () => {
      const history = goodHistory();
      history.runs[1] = { ...history.runs[1]!, endedAtMs: T0 + 1_000, endedBy: 'kill' };
      history.runs.push({ peer: 'peer-b', incarnation: 2, startedAtMs: T0 + 1_500, readyAtMs: T0 + 7_000, endedAtMs: null, endedBy: null, dataDir: 'none' });
      history.ops = history.ops.map((o) => (o.peer === 'peer-b' ? { ...o, incarnation: 2, outcome: 'failed' as const, httpStatus: 503 } : o));
      // peer-c, ready, on the same side of the partition, takes the side's writes.
      const onC = op('status', 4_000, { key: 'svc/other', peer: 'peer-c', status: 'UP', version: v(T0 + 4_000, 'peer-c') });
      history.ops.push(onC);
      expect(broken(history)).toEqual([]);
      // Had peer-c refused too, the side would have taken no write: that still fails.
      Object.assign(onC, { outcome: 'failed', httpStatus: 503, version: undefined });
      const messages = checkHistory(history).violations.map((violation) => violation.message);
      expect(messages.some((m) => m.startsWith('no write was answered on side [peer-b, peer-c]'))).toBe(true);
    });

    it('fails when one side of a partition acknowledged no write', () => {
      const history = goodHistory();
      for (const o of history.ops) if (o.peer === 'peer-b') Object.assign(o, { outcome: 'failed', error: 'timeout', httpStatus: undefined });
      const messages = checkHistory(history).violations.map((violation) => violation.message);
      expect(messages).toContain('no write was answered on side [peer-b, peer-c] of the partition +2.000s..+6.000s (1 sent)');
    });

    it('does not hold against the cluster a cancel lost with the disk of the isolated peer that acknowledged it', () => {
      const lost = (dataDir: 'wipe' | 'keep', sides: string[][]): History => {
        const history = goodHistory();
        history.ops = [...heartbeating(2_100), op('cancel', 3_000), ...sideWrites.map((o) => ({ ...o }))];
        history.observations = polls(200, 2_900);
        history.faults = [{ ...partition, sides }];
        history.runs[0] = { ...history.runs[0]!, endedAtMs: T0 + 3_500, endedBy: 'kill' };
        history.runs.push({ peer: 'peer-a', incarnation: 2, startedAtMs: T0 + 4_000, readyAtMs: T0 + 4_100, endedAtMs: null, endedBy: null, dataDir });
        return history;
      };
      // Cut off alone from the cancel to the kill, then started on an emptied data dir: lost.
      const result = checkHistory(lost('wipe', [['peer-a'], ['peer-b', 'peer-c']]));
      expect(result.violations).toEqual([]);
      expect(result.figures.cancelsLostWithDisk).toBe(1);
      // Its data dir kept: the cancel must survive.
      expect(broken(lost('keep', [['peer-a'], ['peer-b', 'peer-c']]))).toEqual(['cancel-stays']);
      // Another peer on its side could have heard it: the cancel must survive.
      expect(broken(lost('wipe', [['peer-a', 'peer-b'], ['peer-c']]))).toEqual(['cancel-stays']);
    });

    it('does not hold against the cluster a cancel lost with the disk of a peer whose every sent byte was black-holed, killed within the replication allowance', () => {
      // From seed 8675312, 3 peers: peer-c acknowledged a cancel at +86.302 s under a one-way
      // black hole of peer-c->peer-a and peer-c->peer-b (+84.618..+90.217 s), was killed at
      // +87.229 s (0.93 s later) and restarted with an emptied data dir; the cancel came back.
      const lost = (killAtMs: number, fault: Partial<FaultInterval> = {}): History => {
        const history = goodHistory();
        history.ops = [...heartbeating(2_100), op('cancel', 3_000), ...sideWrites.map((o) => ({ ...o }))];
        history.observations = polls(200, 2_900);
        history.faults = [{ kind: 'one-way', startedAtMs: T0 + 1_600, endedAtMs: T0 + 5_200, links: ['peer-a->peer-b', 'peer-a->peer-c'], detail: 'blackhole', ...fault }];
        history.runs[0] = { ...history.runs[0]!, endedAtMs: T0 + killAtMs, endedBy: 'kill' };
        history.runs.push({ peer: 'peer-a', incarnation: 2, startedAtMs: T0 + 4_000, readyAtMs: T0 + 4_100, endedAtMs: null, endedBy: null, dataDir: 'wipe' });
        return history;
      };
      const result = checkHistory(lost(3_935));
      expect(result.violations).toEqual([]);
      expect(result.figures.cancelsLostWithDisk).toBe(1);
      // Killed later than the replication allowance after it: the others had time to pull it.
      expect(broken(lost(4_100))).toEqual(['cancel-stays']);
      // Its calls arrived (only the answers were lost): the others heard the cancel.
      expect(broken(lost(3_935, { detail: 'drop-replies' }))).toEqual(['cancel-stays']);
      // One link still carried what it sent.
      expect(broken(lost(3_935, { links: ['peer-a->peer-b'] }))).toEqual(['cancel-stays']);
      // The black hole began after the cancel was sent.
      expect(broken(lost(3_935, { startedAtMs: T0 + 3_001 }))).toEqual(['cancel-stays']);
    });

    it('does not hold against the cluster a cancel lost with the disk of a peer killed before its replication batch could leave', () => {
      // From seed 8675377, 3 peers: peer-c acknowledged a cancel at +59.983 s (sent +59.981 s),
      // no fault cut its links, it was killed at +59.984 s and restarted with an emptied data
      // dir; a batch leaves replicationBatchDelayMs (5 ms) after the write that opens it.
      const lost = (killAfterSentMs: number, options: { batchDelayMs?: number; dataDir?: 'wipe' | 'keep'; earlierWrite?: boolean } = {}): History => {
        const history = goodHistory();
        const cancel = { ...op('cancel', 3_000), doneAtMs: T0 + 3_002 };
        const earlier = options.earlierWrite ? [op('status', 2_997, { key: 'svc/other', status: 'DOWN', version: v(T0 + 2_997) })] : [];
        history.ops = [...heartbeating(2_100), ...earlier, cancel];
        history.observations = polls(200, 2_900);
        history.faults = [];
        history.settings = { ...history.settings, ...('batchDelayMs' in options ? { replicationBatchDelayMs: options.batchDelayMs } : { replicationBatchDelayMs: 5 }) };
        history.runs[0] = { ...history.runs[0]!, endedAtMs: T0 + 3_000 + killAfterSentMs, endedBy: 'kill' };
        history.runs.push({ peer: 'peer-a', incarnation: 2, startedAtMs: T0 + 4_000, readyAtMs: T0 + 4_100, endedAtMs: null, endedBy: null, dataDir: options.dataDir ?? 'wipe' });
        return history;
      };
      const result = checkHistory(lost(3));
      expect(result.violations).toEqual([]);
      expect(result.figures.cancelsLostWithDisk).toBe(1);
      // Killed a batch delay or more after it was sent: the batch may have left.
      expect(broken(lost(5))).toEqual(['cancel-stays']);
      // Another write just before may have opened the batch, which may have left already.
      expect(broken(lost(3, { earlierWrite: true }))).toEqual(['cancel-stays']);
      // Its data dir kept: the cancel must survive.
      expect(broken(lost(3, { dataDir: 'keep' }))).toEqual(['cancel-stays']);
      // An older history, without the peers' batch delay: judged as before.
      expect(broken(lost(3, { batchDelayMs: undefined }))).toEqual(['cancel-stays']);
    });

    it('counts a 404 from a side whose peer lost its data as an answer', () => {
      const history = goodHistory();
      for (const o of history.ops) if (o.peer === 'peer-b') Object.assign(o, { outcome: 'not-found', httpStatus: 404, version: undefined });
      expect(broken(history)).toEqual([]);
      // ...but not a 503.
      for (const o of history.ops) if (o.peer === 'peer-b') Object.assign(o, { outcome: 'failed', httpStatus: 503 });
      expect(checkHistory(history).violations.map((violation) => violation.message)).toContain(
        'no write was answered on side [peer-b, peer-c] of the partition +2.000s..+6.000s (1 sent)',
      );
    });

    it('does not judge a side whose only peer was restarted too shortly before the partition ended to get ready even alone', () => {
      // Found reading seed 20261129, 5 peers, kills detected, serial: peer-a restarted 1 ms before
      // a 0.7 s partition cut it off alone; its start-up sync could only give up after asking
      // every other peer (a peer call timeout each), and no write on its side could be answered.
      const starting = (allowanceMs: number | undefined, readyAfterMs: number): History => {
        const history = goodHistory();
        history.settings = { ...history.settings, ...(allowanceMs === undefined ? {} : { startupAllowanceMs: allowanceMs }) };
        history.runs[0] = { ...history.runs[0]!, endedAtMs: T0 + 1_999, endedBy: 'kill' };
        history.runs.push({ peer: 'peer-a', incarnation: 2, startedAtMs: T0 + 2_000, readyAtMs: T0 + 2_000 + readyAfterMs, endedAtMs: null, endedBy: null, dataDir: 'keep' });
        // peer-a#2 answers 503 until it is ready; its clients' calls meanwhile fail.
        history.ops = history.ops
          .filter((o) => o.peer !== 'peer-a' || o.sentAtMs < T0 + 1_999 || o.sentAtMs >= T0 + 2_000 + readyAfterMs || o.kind === 'status')
          .map((o) => (o.peer === 'peer-a' && o.sentAtMs >= T0 + 2_000 ? { ...o, incarnation: 2 } : o));
        const onA = history.ops.find((o) => o.peer === 'peer-a' && o.kind === 'status')!;
        // Sent 3.2 s after peer-a#2 started, inside the partition.
        Object.assign(onA, { outcome: 'failed', httpStatus: 503, version: undefined, incarnation: 2, sentAtMs: T0 + 5_200, doneAtMs: T0 + 5_300 });
        return history;
      };
      // The partition lasted 4 s; starting alone may take 5 s: not judged, counted.
      const result = checkHistory(starting(5_000, 4_500));
      expect(result.violations.filter((violation) => violation.property === 'availability')).toEqual([]);
      expect(result.figures.partitionSidesStarting).toBe(1);
      // An older history (no allowance): judged as before.
      expect(checkHistory(starting(undefined, 4_500)).violations.map((violation) => violation.message)).toContain(
        'no write was answered on side [peer-a] of the partition +2.000s..+6.000s (1 sent)',
      );
      // Had it had time to start alone (allowance 3 s) and stayed unready: still a violation.
      expect(checkHistory(starting(3_000, 4_500)).violations.map((violation) => violation.message)).toContain(
        'no write was answered on side [peer-a] of the partition +2.000s..+6.000s (1 sent)',
      );
    });

    it('does not judge a side whose peer was killed while still starting, sooner than it could get ready even alone', () => {
      // Found by the sweep, seed 8675337, 3 peers: peer-b restarted 0.1 s after a 7.5 s partition
      // cut it off alone, was killed again 2.9 s later while its start-up sync still waited on
      // the other peers (5 s allowance), and restarted 1.6 s before the partition ended: no
      // write reached it when it could have been ready, though its first incarnation started
      // 7.4 s before the end. (Seed 8675338 likewise: a peer ready 4.2 s after its start, every
      // write of its side sent before that, killed 1.8 s later.)
      const killedStarting = (killedAfterMs: number, sentAfterMs: number): History => {
        const history = goodHistory();
        history.settings = { ...history.settings, startupAllowanceMs: 3_000 };
        history.runs[0] = { ...history.runs[0]!, endedAtMs: T0 + 1_999, endedBy: 'kill' };
        history.runs.push({ peer: 'peer-a', incarnation: 2, startedAtMs: T0 + 2_000, readyAtMs: null, endedAtMs: T0 + 2_000 + killedAfterMs, endedBy: 'kill', dataDir: 'keep' });
        history.ops = history.ops
          .filter((o) => o.peer !== 'peer-a' || o.sentAtMs < T0 + 1_999 || o.kind === 'status')
          .map((o) => (o.peer === 'peer-a' && o.sentAtMs >= T0 + 2_000 ? { ...o, incarnation: 2 } : o));
        const onA = history.ops.find((o) => o.peer === 'peer-a' && o.kind === 'status')!;
        Object.assign(onA, { outcome: 'failed', httpStatus: 503, version: undefined, incarnation: 2, sentAtMs: T0 + 2_000 + sentAfterMs, doneAtMs: T0 + 2_100 + sentAfterMs });
        return history;
      };
      // Alive 2 s of the 4 s partition, allowance 3 s: it could not have got ready.
      const result = checkHistory(killedStarting(2_000, 100));
      expect(result.violations.filter((violation) => violation.property === 'availability')).toEqual([]);
      expect(result.figures.partitionSidesStarting).toBe(1);
      // A write it took 3.2 s after it started, still not ready: it had had the time, so a violation.
      expect(checkHistory(killedStarting(3_500, 3_200)).violations.map((violation) => violation.message)).toContain(
        'no write was answered on side [peer-a] of the partition +2.000s..+6.000s (1 sent)',
      );
    });

    it('counts a side that no call reached as not exercised, not as a violation', () => {
      const history = goodHistory();
      history.ops = history.ops.filter((o) => o.peer !== 'peer-b');
      expect(broken(history)).toEqual([]);
      expect(checkHistory(history).figures.partitionSidesUnexercised).toBe(1);
    });

    it('fails when a peer exits by itself', () => {
      const history = goodHistory();
      history.runs[1] = { ...history.runs[1]!, endedAtMs: T0 + 9_000, endedBy: 'crash' };
      expect(broken(history)).toContain('no-crash');
    });
  });
});

describe('InstanceTimeline.keptAliveAt', () => {
  const timeline = (ops: ClientOp[], abandonedAtMs?: number) => new InstanceTimeline(KEY, ops, abandonedAtMs, 50);

  it.each([
    ['before the register is acknowledged', heartbeating(5_100), 100, false],
    ['right after the register', heartbeating(5_100), 200, true],
    ['while heartbeats come every second', heartbeating(5_100), 4_000, true],
    ['within the lease after the last heartbeat', heartbeating(5_100), 5_100 + LEASE - 100, true],
    ['past the lease after the last heartbeat', heartbeating(5_100), 5_100 + LEASE + 100, false],
  ])('%s', (_name, ops, atMs, expected) => {
    expect(timeline(ops).keptAliveAt(T0 + atMs)).toBe(expected);
  });

  it('is false once the client abandoned the instance or sent a cancel', () => {
    expect(timeline(heartbeating(5_100), T0 + 3_000).keptAliveAt(T0 + 3_500)).toBe(false);
    expect(timeline([...heartbeating(5_100), op('cancel', 3_000, { outcome: 'failed' })]).keptAliveAt(T0 + 3_500)).toBe(false);
  });

  it('is false after a gap longer than the lease, and true again after a new register', () => {
    const ops = [op('register', 100), op('heartbeat', 4_000), op('register', 6_000), op('heartbeat', 7_000)];
    expect(timeline(ops).keptAliveAt(T0 + 4_500)).toBe(false);
    expect(timeline(ops).keptAliveAt(T0 + 7_500)).toBe(true);
  });

  it('ignores failed and 404 heartbeats', () => {
    const ops = [op('register', 100), op('heartbeat', 1_100, { outcome: 'failed' }), op('heartbeat', 2_100, { outcome: 'not-found' })];
    expect(timeline(ops).keptAliveAt(T0 + 2_500)).toBe(true);
    expect(timeline(ops).keptAliveAt(T0 + 3_200)).toBe(false);
  });
});
