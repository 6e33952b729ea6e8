import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { STARTUP_GRACE_MS } from '../../../src/log/startup-grace.js';
import { Membership } from '../../../src/membership/membership.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

const self: PeerDescriptor = { id: 'peer-a', url: 'http://127.0.0.1:8761', region: 'local', zone: 'a' };
const other: PeerDescriptor = { id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'local', zone: 'b' };

/** peer-b answers pings while `up()` says so, and refuses connections otherwise. */
function transport(up: () => boolean): PeerTransport {
  return {
    call: async (_peer: PeerDescriptor, method: string) => {
      if (!up() || method !== 'ping') throw new PeerCallError('ping to peer-b failed: connect ECONNREFUSED', 'transient', undefined, 'ECONNREFUSED');
      return { id: 'peer-b', incarnation: 'b1', membersHash: '' };
    },
    close: async () => undefined,
  } as unknown as PeerTransport;
}

function start(up: () => boolean) {
  const clock = new FakeClock();
  const logger = recordingLogger();
  const membership = new Membership(
    { clock, rng: seededRng(3), transport: transport(up), logger },
    { self, incarnation: 'a1', seeds: [other], probeIntervalMs: 1_000, probeTimeoutMs: 500, indirectProbes: 0, suspicionTimeoutMs: 3_000 },
  );
  membership.start();
  const downLines = () => logger.lines.filter((line) => line.msg === 'peer down').map((line) => line.level);
  return { clock, membership, downLines };
}

describe('a seed peer down while the cluster starts', () => {
  it('is logged at debug when it never answered, within the start-up grace', async () => {
    const { clock, membership, downLines } = start(() => false);
    await clock.advanceUntil(() => membership.get('peer-b')?.state === 'down', 20_000);
    expect(downLines()).toEqual(['debug']);
    membership.stop();
  });

  it('is a warning once it had answered, or past the grace', async () => {
    let up = true;
    const seen = start(() => up);
    await seen.clock.advance(3_000);
    up = false;
    await seen.clock.advanceUntil(() => seen.membership.get('peer-b')?.state === 'down', 20_000);
    expect(seen.downLines()).toEqual(['warn']);
    seen.membership.stop();

    const late = start(() => false);
    late.clock.jump(STARTUP_GRACE_MS);
    await late.clock.advanceUntil(() => late.membership.get('peer-b')?.state === 'down', 20_000);
    expect(late.downLines()).toEqual(['warn']);
    late.membership.stop();
  });
});
