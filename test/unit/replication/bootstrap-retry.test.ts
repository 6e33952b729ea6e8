import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import type { AntiEntropy } from '../../../src/replication/anti-entropy.js';
import { bootstrap, failureForbidsStartingAlone, retryDelayMs, type BootstrapResult } from '../../../src/replication/bootstrap.js';
import type { Inbox } from '../../../src/replication/inbox.js';
import { encodeEndFrame, encodeStartFrame, SnapshotFrameError } from '../../../src/replication/snapshot-frames.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

const peerB: PeerDescriptor = { id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'local', zone: '' };

const refused = () => new PeerCallError('refused', 'transient', undefined, 'ECONNREFUSED');
const timeout = () => new PeerCallError('timed out', 'transient', undefined, 'UND_ERR_HEADERS_TIMEOUT');
const busy = () => new PeerCallError('answered 503', 'congestion', 503, 'REG_ERR_SNAPSHOT_BUSY');
const page = (records: unknown[], nextBucket: number | null) => ({ records, nextBucket, members: [] });

/** Runs a bootstrap against `transport` with one peer, advancing virtual time until it settles. */
async function run(transport: PeerTransport, options: { stopAtMs?: number; peers?: PeerDescriptor[]; stopping?: () => boolean } = {}) {
  const clock = new FakeClock(0);
  const applied: unknown[] = [];
  const inbox = {
    apply: (_from: string, records: readonly unknown[]) => {
      applied.push(...records);
      return { applied: records.length, ignored: 0, invalid: 0 };
    },
  } as unknown as Inbox;
  let stopped = false;
  let rounds = 0;
  let result: BootstrapResult | undefined;
  const done = bootstrap(
    options.peers ?? [peerB],
    {
      clock,
      rng: seededRng(1),
      transport,
      inbox,
      antiEntropy: { syncWith: async () => void (rounds += 1) } as unknown as AntiEntropy,
      logger: recordingLogger(),
      learn: () => undefined,
      reportContact: () => undefined,
      stopping: () => stopped || (options.stopping?.() ?? false),
    },
    { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: 0 },
  ).then((value) => (result = value));
  if (options.stopAtMs !== undefined) clock.setTimeout(() => (stopped = true), options.stopAtMs);
  await clock.advanceUntil(() => result !== undefined, 600_000, 100);
  await done;
  return { result: result!, applied, endMs: clock.nowMs(), pendingTimers: clock.pendingTimers, antiEntropyRounds: rounds };
}

/** A page-only transport (an older peer, or a transport that cannot stream) answering by call number. */
function pages(answer: (call: number) => unknown) {
  const calls: number[] = [];
  const transport: PeerTransport = {
    call: async () => {
      const n = calls.length;
      calls.push(n);
      const out = answer(n);
      if (out instanceof Error) throw out;
      return out;
    },
  };
  return { transport, calls };
}

describe('retryDelayMs', () => {
  it.each([
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [5, 16_000],
    [6, 30_000],
    [60, 30_000],
  ])('round %i waits %i ms', (round, waitMs) => {
    expect(retryDelayMs(round, 1_000, 30_000)).toBe(waitMs);
  });
});

describe('failureForbidsStartingAlone', () => {
  it.each([
    ['refused, nothing received', refused(), 0, false],
    ['401, nothing received', new PeerCallError('401', 'permanent', 401), 0, false],
    ['refused after records were merged', refused(), 1, true],
    ['503 busy', busy(), 0, true],
    ['500', new PeerCallError('500', 'transient', 500), 0, true],
    ['a timeout once connected', timeout(), 0, true],
    ['a frame that cannot be read', new SnapshotFrameError('not JSON'), 0, true],
  ])('%s: %s', (_name, error, received, forbids) => {
    expect(failureForbidsStartingAlone(error, received)).toBe(forbids);
  });
});

describe('a start-up sync that fails midway', () => {
  it('does not start alone with part of the registry: it tries again, waiting 1 s, 2 s, 4 s, until a whole sync succeeds', async () => {
    // Rounds 1-3: the first page comes, the second times out. Round 4: both pages come.
    const attempts: number[] = [];
    let round = 0;
    const transport: PeerTransport = {
      call: async (_peer, _method, body) => {
        const { fromBucket } = body as { fromBucket: number };
        if (fromBucket === 0) {
          round += 1;
          attempts.push(round);
          return page([{ n: 1 }], 64);
        }
        if (round < 4) throw timeout();
        return page([{ n: 2 }], null);
      },
    };
    const clock = new FakeClock(0);
    const starts: number[] = [];
    const timed: PeerTransport = {
      call: async (peer, method, body, options) => {
        if ((body as { fromBucket: number }).fromBucket === 0) starts.push(clock.nowMs());
        return transport.call(peer, method, body, options);
      },
    };
    let result: BootstrapResult | undefined;
    void bootstrap(
      [peerB],
      {
        clock,
        rng: seededRng(1),
        transport: timed,
        inbox: { apply: (_f: string, r: readonly unknown[]) => ({ applied: r.length, ignored: 0, invalid: 0 }) } as unknown as Inbox,
        antiEntropy: { syncWith: async () => undefined } as unknown as AntiEntropy,
        logger: recordingLogger(),
        learn: () => undefined,
        reportContact: () => undefined,
      },
      { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: 0 },
    ).then((value) => (result = value));
    await clock.advanceUntil(() => result !== undefined, 60_000, 50);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(attempts).toEqual([1, 2, 3, 4]);
    // The timed-out page failed each round at once here; the waits between rounds double.
    expect(starts.slice(1).map((at, i) => at - starts[i]!)).toEqual([1_000, 2_000, 4_000]);
  });

  it('keeps trying past 30 s at 30 s apart, and gives up only when the peer stops', async () => {
    const { transport, calls } = pages((call) => (call === 0 ? page([{ n: 1 }], 64) : refused()));
    const { result, applied, endMs } = await run(transport, { stopAtMs: 200_000 });
    expect(applied).toEqual([{ n: 1 }]);
    // Waits 1, 2, 4, 8, 16, then 30 s each: rounds start at 0 (two calls), then 1, 3, 7, 15, 31,
    // 61, 91, 121, 151 and 181 s (one refused call each); stopped at 200 s, it gives up after its wait.
    expect(calls).toHaveLength(2 + 10);
    expect(result).toEqual({ from: null, records: 0 });
    expect(endMs).toBeGreaterThanOrEqual(211_000);
  });

  it('still starts alone at once when no peer could be reached and nothing was received', async () => {
    const { transport, calls } = pages(() => refused());
    const { result, endMs } = await run(transport);
    expect(result).toEqual({ from: null, records: 0 });
    expect(calls).toHaveLength(1);
    expect(endMs).toBeLessThan(1_000);
  });

  it('retries a peer that answers REG_ERR_SNAPSHOT_BUSY instead of starting alone', async () => {
    let streams = 0;
    const transport: PeerTransport = {
      call: async () => {
        throw new Error('no page should be asked for');
      },
      async *streamSnapshot() {
        streams += 1;
        if (streams < 3) throw busy();
        yield encodeStartFrame([], 1, true).trim();
        yield JSON.stringify({ t: 'records', records: [{ n: 1 }] });
        yield encodeEndFrame(1, 1).trim();
      },
    };
    const { result, applied } = await run(transport);
    expect(result).toEqual({ from: 'peer-b', records: 1 });
    expect(applied).toEqual([{ n: 1 }]);
    expect(streams).toBe(3);
  });
});

describe('the start-up sync towards an older peer', () => {
  it.each([400, 404, 405])('falls back to pages when the stream is answered %i', async (status) => {
    const called: string[] = [];
    const transport: PeerTransport = {
      call: async (_peer, method) => {
        called.push(method);
        return page([{ n: 1 }, { n: 2 }], null);
      },
      // eslint-disable-next-line require-yield
      async *streamSnapshot() {
        called.push('snapshot-stream');
        throw new PeerCallError(`answered ${status}`, 'permanent', status);
      },
    };
    const { result, applied } = await run(transport);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(applied).toEqual([{ n: 1 }, { n: 2 }]);
    expect(called).toEqual(['snapshot-stream', 'snapshot']);
  });

  it('does not fall back to pages, but retries, after a stream cut short', async () => {
    let streams = 0;
    const transport: PeerTransport = {
      call: async () => page([], null),
      async *streamSnapshot() {
        streams += 1;
        yield encodeStartFrame([], 2, true).trim();
        yield JSON.stringify({ t: 'records', records: [{ n: 1 }] });
        if (streams === 1) return; // no end frame
        yield JSON.stringify({ t: 'records', records: [{ n: 2 }] });
        yield encodeEndFrame(2, 2).trim();
      },
    };
    const { result, applied } = await run(transport);
    expect(streams).toBe(2);
    expect(result).toEqual({ from: 'peer-b', records: 2 });
    expect(applied).toEqual([{ n: 1 }, { n: 1 }, { n: 2 }]);
  });

  it('refuses an oversized frame with a clear error and applies nothing of it', async () => {
    const lines: string[] = [];
    const transport: PeerTransport = {
      call: async () => refused(),
      async *streamSnapshot() {
        yield encodeStartFrame([], 1, true).trim();
        yield JSON.stringify({ t: 'records', records: Array.from({ length: 10_001 }, () => ({})) });
      },
    };
    const logger = recordingLogger();
    const clock = new FakeClock(0);
    let result: BootstrapResult | undefined;
    const applied: unknown[] = [];
    void bootstrap(
      [peerB],
      {
        clock,
        rng: seededRng(1),
        transport,
        inbox: { apply: (_f: string, r: readonly unknown[]) => (applied.push(...r), { applied: r.length, ignored: 0, invalid: 0 }) } as unknown as Inbox,
        antiEntropy: { syncWith: async () => undefined } as unknown as AntiEntropy,
        logger,
        learn: () => undefined,
        reportContact: () => undefined,
        stopping: () => clock.nowMs() > 5_000,
      },
      { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: 0 },
    ).then((value) => (result = value));
    await clock.advanceUntil(() => result !== undefined, 60_000, 100);
    for (const line of logger.lines) lines.push(`${line.level} ${line.msg} ${String((line.fields as { error?: string }).error ?? '')}`);
    expect(applied).toEqual([]);
    expect(lines[0]).toBe('warn start-up sync from peer failed; trying the next snapshot records frame of 10001 records, more than 10000');
    expect(lines).toContain('warn start-up sync incomplete; staying not ready and trying every peer again ');
    expect(result).toEqual({ from: null, records: 0 });
  });
});

describe('a start-up sync stopped midway', () => {
  it('tries no further peer once the peer is stopping', async () => {
    const peerC: PeerDescriptor = { ...peerB, id: 'peer-c', url: 'http://127.0.0.1:8763' };
    let stopped = false;
    const asked: string[] = [];
    const transport: PeerTransport = {
      call: async (peer) => {
        asked.push(peer.id);
        // The peer is stopped while its first call is in flight, which then fails as busy.
        stopped = true;
        throw busy();
      },
    };
    const { result, pendingTimers } = await run(transport, { peers: [peerB, peerC], stopping: () => stopped });
    expect(asked).toHaveLength(1);
    expect(result).toEqual({ from: null, records: 0 });
    expect(pendingTimers).toBe(0);
  });

  it('runs no closing anti-entropy round when stopped while its pull was in flight', async () => {
    let stopped = false;
    const { transport } = pages(() => {
      stopped = true;
      return page([{ id: 'r1' }], null);
    });
    const { result, antiEntropyRounds } = await run(transport, { stopping: () => stopped });
    expect(antiEntropyRounds).toBe(0);
    expect(result).toEqual({ from: null, records: 0 });
  });
});
