import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { STARTUP_GRACE_MS, unreachablePeerLevel } from '../../../src/log/startup-grace.js';
import { bootstrap, type BootstrapComponents } from '../../../src/replication/bootstrap.js';
import type { AntiEntropy } from '../../../src/replication/anti-entropy.js';
import type { Inbox } from '../../../src/replication/inbox.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

const peers: PeerDescriptor[] = ['peer-b', 'peer-c'].map((id, i) => ({ id, url: `http://127.0.0.1:${8762 + i}`, region: 'local', zone: '' }));
const START_MS = Date.UTC(2026, 0, 1);

/** A transport on which every call fails as `failure` says. */
function failing(failure: () => Error): PeerTransport {
  return { call: async () => Promise.reject(failure()), close: async () => undefined } as unknown as PeerTransport;
}

const refused = () => new PeerCallError('snapshot to peer-b failed: connect ECONNREFUSED 127.0.0.1:8762', 'transient', undefined, 'ECONNREFUSED');
const unauthorized = () => new PeerCallError('snapshot to peer-b answered 401: REG_ERR_UNAUTHORIZED', 'permanent', 401, 'REG_ERR_UNAUTHORIZED');

async function run(transport: PeerTransport, nowMs: number) {
  const clock = new FakeClock(nowMs);
  const logger = recordingLogger();
  const components: BootstrapComponents = {
    clock,
    rng: seededRng(1),
    transport,
    inbox: {} as Inbox,
    antiEntropy: {} as AntiEntropy,
    logger,
    learn: () => undefined,
    reportContact: () => undefined,
  };
  const result = await bootstrap(peers, components, { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 64, startedAtMs: START_MS });
  return { result, lines: logger.lines.map((line) => `${line.level} ${line.msg}`) };
}

describe('the start-up sync while the cluster starts', () => {
  it('logs peers that are not listening yet at debug, and starting alone at info, within the grace', async () => {
    const { result, lines } = await run(failing(refused), START_MS + 2_000);
    expect(result).toEqual({ from: null, records: 0 });
    expect(lines).toEqual([
      'debug start-up sync from peer failed; trying the next',
      'debug start-up sync from peer failed; trying the next',
      'info no other peer is up yet; starting alone (anti-entropy merges this peer in when they come up)',
    ]);
  });

  it('warns past the grace, and always for a peer that answers with an error', async () => {
    expect((await run(failing(refused), START_MS + STARTUP_GRACE_MS)).lines).toEqual([
      'warn start-up sync from peer failed; trying the next',
      'warn start-up sync from peer failed; trying the next',
      'warn no peer answered the start-up sync; starting alone',
    ]);
    expect((await run(failing(unauthorized), START_MS + 1_000)).lines).toEqual([
      'warn start-up sync from peer failed; trying the next',
      'warn start-up sync from peer failed; trying the next',
      'warn no peer answered the start-up sync; starting alone',
    ]);
  });
});

describe('unreachablePeerLevel', () => {
  it.each([
    [0, false, 'debug'],
    [STARTUP_GRACE_MS - 1, false, 'debug'],
    [STARTUP_GRACE_MS, false, 'warn'],
    [0, true, 'warn'],
    [60_000, true, 'warn'],
  ] as const)('%i ms after start, answered before %s: %s', (sinceStartMs, answered, level) => {
    expect(unreachablePeerLevel(START_MS + sinceStartMs, START_MS, answered)).toBe(level);
  });
});
