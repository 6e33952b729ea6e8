import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import type { AntiEntropy } from '../../../src/replication/anti-entropy.js';
import { bootstrap, everyPeerGaveItsWhole, type BootstrapResult } from '../../../src/replication/bootstrap.js';
import type { Inbox } from '../../../src/replication/inbox.js';
import { encodeEndFrame, encodeStartFrame } from '../../../src/replication/snapshot-frames.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

const descriptor = (id: string, port: number): PeerDescriptor => ({ id, url: `http://127.0.0.1:${port}`, region: 'local', zone: '' });
const peerB = descriptor('peer-b', 8762);
const peerC = descriptor('peer-c', 8763);
const refused = () => new PeerCallError('refused', 'transient', undefined, 'ECONNREFUSED');

/** A whole stream of `records`, its start frame saying `settled` (left out: a peer of an older version). */
function streamLines(records: unknown[], settled: boolean | undefined): string[] {
  const start = settled === undefined ? JSON.stringify({ t: 'start', v: 1, members: [], size: records.length }) : encodeStartFrame([], records.length, settled).trim();
  return [start, JSON.stringify({ t: 'records', records }), encodeEndFrame(1, records.length).trim()];
}

/** A transport on which only peer-b answers: its stream number `n` (from 1) is `lines(n)`; pages and other peers refuse. */
function onlyPeerB(lines: (stream: number) => string[]): { transport: PeerTransport; streams: () => number } {
  let streams = 0;
  const transport: PeerTransport = {
    call: async () => refused(),
    async *streamSnapshot(peer) {
      if (peer.id !== 'peer-b') throw refused();
      streams += 1;
      yield* lines(streams);
    },
  };
  return { transport, streams: () => streams };
}

/**
 * Runs a bootstrap against `transport` until it settles (or `stopAtMs`), recording what the
 * inbox applied, when the peer became unsettled (and how many records it had applied then),
 * and the anti-entropy rounds it ran.
 */
async function run(transport: PeerTransport, peers: PeerDescriptor[], options: { stopAtMs?: number } = {}) {
  const clock = new FakeClock(0);
  const applied: Array<{ from: string; record: unknown }> = [];
  const unsettledAt: number[] = [];
  const closingRounds: string[] = [];
  let stopped = false;
  let result: BootstrapResult | undefined;
  const done = bootstrap(
    peers,
    {
      clock,
      rng: seededRng(3),
      transport,
      inbox: {
        apply: (from: string, records: readonly unknown[]) => {
          for (const record of records) applied.push({ from, record });
          return { applied: records.length, ignored: 0, invalid: 0 };
        },
      } as unknown as Inbox,
      antiEntropy: { syncWith: async (peer: PeerDescriptor) => void closingRounds.push(peer.id) } as unknown as AntiEntropy,
      logger: recordingLogger(),
      learn: () => undefined,
      reportContact: () => undefined,
      unsettled: () => void unsettledAt.push(applied.length),
      stopping: () => stopped,
    },
    { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: 0 },
  ).then((value) => (result = value));
  if (options.stopAtMs !== undefined) clock.setTimeout(() => (stopped = true), options.stopAtMs);
  await clock.advanceUntil(() => result !== undefined, 600_000, 100);
  await done;
  return { result: result!, applied, unsettledAt, closingRounds, endMs: clock.nowMs() };
}

describe('a start-up sync from a peer that is itself still syncing (unsettled)', () => {
  it('merges its records but is not done until that peer says it is settled; then syncs from it', async () => {
    // peer-b is mid-sync for its first 3 streams (one of its 3 records so far), then settled with all 3.
    const { transport, streams } = onlyPeerB((n) => (n <= 3 ? streamLines([{ n: 1 }], false) : streamLines([{ n: 1 }, { n: 2 }, { n: 3 }], true)));
    const { result, applied, unsettledAt, closingRounds, endMs } = await run(transport, [peerB, peerC]);
    expect(streams()).toBe(4);
    expect(result).toEqual({ from: 'peer-b', records: 3 });
    // Nothing thrown away: each partial stream was merged too.
    expect(applied.map(({ record }) => record)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }, { n: 1 }, { n: 2 }, { n: 3 }]);
    // It waited 1 + 2 + 4 s between the rounds, as for a failed pull.
    expect(endMs).toBeGreaterThanOrEqual(7_000);
    // Only the closing round of the whole sync ran; the peer was unsettled from its first pull on, before any record merged.
    expect(closingRounds).toEqual(['peer-b']);
    expect(unsettledAt).toEqual([0, 1, 2, 3]);
  });

  it('goes on to the next peer of the round and completes from a settled one there', async () => {
    const asked: string[] = [];
    const transport: PeerTransport = {
      call: async () => refused(),
      async *streamSnapshot(peer) {
        asked.push(peer.id);
        yield* peer.id === 'peer-b' ? streamLines([{ from: 'b' }], false) : streamLines([{ from: 'c' }, { from: 'c2' }], true);
      },
    };
    const { result, applied, closingRounds, endMs } = await run(transport, [peerB, peerC]);
    expect(result).toEqual({ from: 'peer-c', records: 2 });
    expect(closingRounds).toEqual(['peer-c']);
    expect(endMs).toBeLessThan(1_000);
    // peer-b's records are merged when it was asked first (the order is the seeded shuffle).
    if (asked[0] === 'peer-b') expect(applied[0]).toEqual({ from: 'peer-b', record: { from: 'b' } });
    expect(asked.filter((id) => id === 'peer-c')).toHaveLength(1);
  });

  it('does not start alone when the only peer that answered is unsettled, even with nothing received: it waits for it', async () => {
    const { transport, streams } = onlyPeerB((n) => (n === 1 ? streamLines([], false) : streamLines([{ n: 1 }], true)));
    const { result, endMs } = await run(transport, [peerB, peerC]);
    expect(streams()).toBe(2);
    expect(result).toEqual({ from: 'peer-b', records: 1 });
    expect(endMs).toBeGreaterThanOrEqual(1_000);
  });

  it('keeps waiting while the peer stays unsettled and another cannot be reached, and gives up only when stopped', async () => {
    const { transport } = onlyPeerB(() => streamLines([{ n: 1 }], false));
    const { result, closingRounds, unsettledAt } = await run(transport, [peerB, peerC], { stopAtMs: 100_000 });
    expect(result).toEqual({ from: null, records: 0 });
    expect(closingRounds).toEqual([]);
    // Unsettled from its first pull (it holds what may be part of a registry), before the record merged.
    expect(unsettledAt[0]).toBe(0);
  });

  it("reads the pages' settled field: an unsettled first page is merged, not counted; a settled one completes", async () => {
    let pulls = 0;
    const transport: PeerTransport = {
      call: async (peer, _method, body) => {
        if (peer.id !== 'peer-b') throw refused();
        const { fromBucket } = body as { fromBucket: number };
        if (fromBucket === 0) pulls += 1;
        const settled = pulls > 1;
        return fromBucket === 0
          ? { records: [{ page: 1, pull: pulls }], nextBucket: 64, members: [], settled }
          : { records: [{ page: 2, pull: pulls }], nextBucket: null, members: [], settled };
      },
    };
    const { result, applied, unsettledAt } = await run(transport, [peerB, peerC]);
    expect(pulls).toBe(2);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(applied).toHaveLength(4);
    expect(unsettledAt).toEqual([0, 2]);
  });
});

describe('everyPeerGaveItsWhole', () => {
  it.each([
    ['every known peer gave its whole registry', ['peer-b', 'peer-c'], ['peer-b', 'peer-c'], true],
    ['one known peer did not (unreachable, cut off, busy)', ['peer-b', 'peer-c'], ['peer-b'], false],
    ['a peer learned during the round was not asked yet', ['peer-b', 'peer-c', 'peer-d'], ['peer-b', 'peer-c'], false],
    ['no peer known', [], [], false],
  ])('%s: %s', (_name, known, completed, done) => {
    expect(everyPeerGaveItsWhole(known, new Set(completed))).toBe(done);
  });
});

describe('a start-up sync in which every peer is itself syncing', () => {
  it('ends in a round in which every known peer gave its whole registry: it holds all of them', async () => {
    const transport: PeerTransport = {
      call: async () => refused(),
      async *streamSnapshot(peer) {
        yield* streamLines([{ from: peer.id }], false);
      },
    };
    const { result, applied, closingRounds, endMs } = await run(transport, [peerB, peerC]);
    expect(result).toEqual({ from: closingRounds[0], records: 2 });
    expect(applied.map(({ from }) => from).sort()).toEqual(['peer-b', 'peer-c']);
    expect(closingRounds).toHaveLength(1);
    expect(endMs).toBeLessThan(1_000);
  });

  it('does not end while a peer learned from their start frames has not given its registry', async () => {
    // peer-b and peer-c are syncing and name peer-d, which cannot be reached.
    const peerD = descriptor('peer-d', 8764);
    const known = [peerB, peerC];
    const transport: PeerTransport = {
      call: async () => refused(),
      async *streamSnapshot(peer) {
        if (peer.id === 'peer-d') throw new PeerCallError('timed out', 'transient', undefined, 'UND_ERR_HEADERS_TIMEOUT');
        if (!known.includes(peerD)) known.push(peerD);
        yield* streamLines([{ from: peer.id }], false);
      },
    };
    const clock = new FakeClock(0);
    let result: BootstrapResult | undefined;
    let stopped = false;
    void bootstrap(
      [peerB, peerC],
      {
        clock,
        rng: seededRng(3),
        transport,
        inbox: { apply: (_f: string, r: readonly unknown[]) => ({ applied: r.length, ignored: 0, invalid: 0 }) } as unknown as Inbox,
        antiEntropy: { syncWith: async () => undefined } as unknown as AntiEntropy,
        logger: recordingLogger(),
        learn: () => undefined,
        reportContact: () => undefined,
        knownPeers: () => known,
        stopping: () => stopped,
      },
      { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: 0 },
    ).then((value) => (result = value));
    await clock.advance(60_000);
    expect(result).toBeUndefined();
    stopped = true;
    await clock.advanceUntil(() => result !== undefined, 60_000, 100);
    expect(result).toEqual({ from: null, records: 0 });
  });
});

describe('a start-up sync from a peer of an older version (no settled field)', () => {
  it('counts its complete stream as the sync, as before', async () => {
    const transport: PeerTransport = {
      call: async () => refused(),
      async *streamSnapshot() {
        yield* streamLines([{ n: 1 }, { n: 2 }], undefined);
      },
    };
    const { result, closingRounds, unsettledAt, endMs } = await run(transport, [peerB]);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(closingRounds).toEqual(['peer-b']);
    expect(unsettledAt).toEqual([0]);
    expect(endMs).toBeLessThan(1_000);
  });

  it('counts its complete pages as the sync, as before', async () => {
    const transport: PeerTransport = {
      call: async (_peer, _method, body) =>
        (body as { fromBucket: number }).fromBucket === 0 ? { records: [{ n: 1 }], nextBucket: 64, members: [] } : { records: [{ n: 2 }], nextBucket: null, members: [] },
    };
    const { result, unsettledAt, endMs } = await run(transport, [peerB]);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(unsettledAt).toEqual([0]);
    expect(endMs).toBeLessThan(1_000);
  });
});
