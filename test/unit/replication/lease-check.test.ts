import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/logger.js';
import { instanceKeyString, type StoredInstance } from '../../../src/registry/types.js';
import type { Inbox } from '../../../src/replication/inbox.js';
import { LeaseCheck } from '../../../src/replication/lease-check.js';
import type { LeaseCheckRequest } from '../../../src/transport/peer-calls.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../../../src/transport/transport.js';
import { settle } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { recordingLogger } from '../../support/recording-logger.js';
import { record, stored } from '../../support/records.js';

const peerB: PeerDescriptor = { id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'local', zone: '' };
const peerC: PeerDescriptor = { id: 'peer-c', url: 'http://127.0.0.1:8763', region: 'local', zone: '' };

const expired = (instanceId: string, wallMs = 1_000): StoredInstance => stored(record({ instanceId, peerId: 'peer-a', wallMs }));

/** A LeaseCheck whose peers answer through `answer` (or fail when it throws). */
function harness(peers: PeerDescriptor[], answer: (peer: PeerDescriptor, request: LeaseCheckRequest) => unknown, batchMaxEntries = 100) {
  const calls: Array<{ peer: string; request: LeaseCheckRequest }> = [];
  const applied: Array<{ from: string; records: readonly unknown[] }> = [];
  const transport = {
    call: async (peer: PeerDescriptor, method: string, request: LeaseCheckRequest) => {
      expect(method).toBe('lease-check');
      calls.push({ peer: peer.id, request });
      return answer(peer, request);
    },
  } as unknown as PeerTransport;
  const inbox = {
    apply: (from: string, records: readonly unknown[]) => {
      applied.push({ from, records });
      return { applied: records.length, ignored: 0, invalid: 0 };
    },
  } as unknown as Inbox;
  const check = new LeaseCheck(
    { transport, inbox, logger: silentLogger, livePeers: () => peers, reportContact: () => undefined },
    { selfId: 'peer-a', callTimeoutMs: 1_000, batchMaxEntries },
  );
  return { check, calls, applied };
}

/** A whole round at once, as one reaper run gives it: of `expired`, those cleared for eviction now. */
function clear(check: LeaseCheck, expired: readonly StoredInstance[], nowMs: number, answered: () => void): StoredInstance[] {
  const round = check.begin(nowMs, answered);
  const cleared = expired.filter((entry) => round.cleared(entry));
  round.close();
  return cleared;
}

describe('LeaseCheck: the owner asks the other peers before it evicts', () => {
  it('clears at once what it owns when no other peer is up', () => {
    const { check, calls } = harness([], () => ({ records: [] }));
    const entries = [expired('i-1'), expired('i-2')];
    expect(clear(check, entries, 10_000, () => undefined)).toEqual(entries);
    expect(calls).toHaveLength(0);
  });

  it('holds what it has not asked about, asks every live peer once, and clears it when they have answered', async () => {
    const { check, calls } = harness([peerB, peerC], () => ({ records: [] }));
    const entries = [expired('i-1'), expired('i-2')];
    let answered = 0;
    expect(clear(check, entries, 10_000, () => (answered += 1))).toEqual([]);
    expect(check.pending).toBe(2);
    await settle();
    expect(answered).toBe(1);
    expect(calls.map((call) => call.peer).sort()).toEqual(['peer-b', 'peer-c']);
    expect(calls[0]!.request).toEqual({ from: 'peer-a', entries: entries.map((e) => [instanceKeyString(e.record), e.record.version]) });
    expect(clear(check, entries, 10_250, () => (answered += 1))).toEqual(entries);
    expect(calls).toHaveLength(2);
  });

  it('applies what a peer took over, through the inbox', async () => {
    const takenOver = { ...record({ instanceId: 'i-1', peerId: 'peer-b', wallMs: 9_000 }), leaseRemainingMs: 20_000 };
    const { check, applied } = harness([peerB, peerC], (peer) => ({ records: peer.id === 'peer-b' ? [takenOver] : [] }));
    clear(check, [expired('i-1')], 10_000, () => undefined);
    await settle();
    expect(applied).toEqual([{ from: 'peer-b', records: [takenOver] }]);
  });

  it('takes a peer that cannot answer as not hearing the client', async () => {
    const { check } = harness([peerB, peerC], (peer) => {
      if (peer.id === 'peer-c') throw new PeerCallError('lease-check to peer-c failed: timeout', 'transient');
      return { records: [] };
    });
    const entries = [expired('i-1')];
    clear(check, entries, 10_000, () => undefined);
    await settle();
    expect(clear(check, entries, 10_250, () => undefined)).toEqual(entries);
  });

  it('asks again about an instance whose version changed since it asked', async () => {
    const { check, calls } = harness([peerB], () => ({ records: [] }));
    clear(check, [expired('i-1', 1_000)], 10_000, () => undefined);
    await settle();
    const newer = expired('i-1', 2_000);
    expect(clear(check, [newer], 10_250, () => undefined)).toEqual([]);
    await settle();
    expect(calls).toHaveLength(2);
    expect(clear(check, [newer], 10_500, () => undefined)).toEqual([newer]);
  });

  it('clears an instance whose question never got an answer after twice the call timeout', () => {
    const { check } = harness([peerB], () => new Promise(() => undefined));
    const entries = [expired('i-1')];
    clear(check, entries, 10_000, () => undefined);
    expect(clear(check, entries, 11_999, () => undefined)).toEqual([]);
    expect(clear(check, entries, 12_000, () => undefined)).toEqual(entries);
  });

  it('asks in batches of at most batchMaxEntries', async () => {
    const { check, calls } = harness([peerB], () => ({ records: [] }), 2);
    clear(check, ['i-1', 'i-2', 'i-3', 'i-4', 'i-5'].map((id) => expired(id)), 10_000, () => undefined);
    await settle();
    expect(calls.map((call) => call.request.entries.length)).toEqual([2, 2, 1]);
  });
});

describe('the lease-check peer method', () => {
  it('refuses entries that are not [key, version] pairs, and answers nothing for an instance it does not hear', async () => {
    const { node } = await createTestNode();
    await expect(node.peerApi.handle('lease-check', { from: 'peer-b', entries: [['default/orders/i-1']] })).rejects.toMatchObject({
      code: 'REG_ERR_VALIDATION',
      message: 'entries[0]: must be [key, version]',
    });
    node.registry.register({
      namespace: 'default',
      service: 'orders',
      instanceId: 'i-1',
      data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
      leaseDurationMs: 30_000,
    });
    const entry = node.registry.find({ namespace: 'default', service: 'orders', instanceId: 'i-1' })!;
    // It owns the instance itself: another peer asking about it takes nothing over.
    const answer = await node.peerApi.handle('lease-check', { from: 'peer-b', entries: [[instanceKeyString(entry.record), entry.record.version]] });
    expect(answer).toEqual({ records: [] });
    expect(node.registry.find(entry.record)?.record.version).toBe(entry.record.version);
  });
});

describe('LeaseCheck when applying the answers fails', () => {
  it('logs the failure rather than leaving an unhandled rejection (which would stop the peer), and still clears the instance', async () => {
    const logger = recordingLogger();
    const transport = { call: async () => ({ records: [{ broken: true }] }) } as unknown as PeerTransport;
    const inbox = { apply: () => { throw new Error('disk full'); } } as unknown as Inbox;
    const check = new LeaseCheck(
      { transport, inbox, logger, livePeers: () => [peerB], reportContact: () => undefined },
      { selfId: 'peer-a', callTimeoutMs: 1_000, batchMaxEntries: 100 },
    );
    const entries = [expired('i-1')];
    clear(check, entries, 10_000, () => { throw new Error('reaper run failed'); });
    await settle();
    expect(clear(check, entries, 10_250, () => undefined)).toEqual(entries);
    expect(logger.lines.some((line) => line.msg === 'lease check failed')).toBe(true);
  });
});
