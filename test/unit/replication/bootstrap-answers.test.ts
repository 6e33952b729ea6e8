import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import type { AntiEntropy } from '../../../src/replication/anti-entropy.js';
import { bootstrap } from '../../../src/replication/bootstrap.js';
import type { Inbox } from '../../../src/replication/inbox.js';
import type { PeerDescriptor, PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

const peers: PeerDescriptor[] = ['peer-b', 'peer-c'].map((id, i) => ({ id, url: `http://127.0.0.1:${8762 + i}`, region: 'local', zone: '' }));

/** Each peer answers every snapshot call with its page; the calls and the applied batches are kept. */
function cluster(pages: Record<string, unknown>) {
  const called: string[] = [];
  const applied: { from: string; records: readonly unknown[] }[] = [];
  const learned: PeerDescriptor[][] = [];
  const transport: PeerTransport = {
    call: async (peer) => {
      called.push(peer.id);
      return pages[peer.id];
    },
  };
  const inbox = {
    apply: (from: string, records: readonly unknown[]) => {
      applied.push({ from, records });
      return { applied: records.length, ignored: 0, invalid: 0 };
    },
  } as unknown as Inbox;
  const antiEntropy = { syncWith: async () => undefined } as unknown as AntiEntropy;
  const run = () =>
    bootstrap(
      peers,
      {
        clock: new FakeClock(),
        rng: seededRng(1),
        transport,
        inbox,
        antiEntropy,
        logger: recordingLogger(),
        learn: (members) => void learned.push(members),
        reportContact: () => undefined,
      },
      { selfId: 'peer-a', callTimeoutMs: 1_000, bucketsPerPage: 4096, startedAtMs: 0 },
    );
  return { run, called, applied, learned };
}

describe('the start-up sync reads snapshot pages through the checked answer', () => {
  it('takes a well-formed page whole: its records to the inbox, its members to membership', async () => {
    const page = { records: [{ any: 'record' }], nextBucket: null, members: [peers[0]] };
    const { run, applied, learned } = cluster({ 'peer-b': page, 'peer-c': page });
    const result = await run();
    expect(result.records).toBe(1);
    expect(applied).toEqual([{ from: result.from, records: [{ any: 'record' }] }]);
    expect(learned).toEqual([[peers[0]]]);
  });

  it('refuses a page whose member list cannot be read before applying any of it, and syncs from the next peer', async () => {
    const bad = { records: [{ from: 'bad' }], nextBucket: null, members: [{ id: 'peer-x', url: 'not a url', region: '', zone: '' }] };
    const good = { records: [{ from: 'good' }], nextBucket: null, members: [] };
    const first = cluster({ 'peer-b': good, 'peer-c': good });
    await first.run();
    const badFirst = first.called[0]!;
    const { run, called, applied } = cluster({ [badFirst]: bad, [peers.find((p) => p.id !== badFirst)!.id]: good });
    const result = await run();
    expect(called[0]).toBe(badFirst);
    expect(result.from).not.toBe(badFirst);
    expect(applied).toEqual([{ from: result.from, records: [{ from: 'good' }] }]);
  });

  it('reads a page without a record list as an empty one, and stops at a next bucket that does not move on', async () => {
    const { run, called, applied } = cluster({ 'peer-b': { nextBucket: 0, members: [] }, 'peer-c': { nextBucket: 0, members: [] } });
    const result = await run();
    expect(result.records).toBe(0);
    expect(called).toHaveLength(1);
    expect(applied).toEqual([{ from: result.from, records: [] }]);
  });
});
