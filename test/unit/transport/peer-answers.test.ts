import { describe, expect, it } from 'vitest';
import { callPeer, checkAnswer } from '../../../src/transport/peer-answers.js';
import { peerMethods, type PeerDescriptor, type PeerMethod } from '../../../src/transport/peer-calls.js';
import type { PeerTransport } from '../../../src/transport/transport.js';

const peer: PeerDescriptor = { id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'local', zone: 'b' };
const record = { namespace: 'default', service: 'orders', instanceId: 'i-1' };

/** A transport whose every call answers `answer`, remembering what it was asked. */
function answering(answer: unknown) {
  const calls: { method: string; body: unknown }[] = [];
  const transport: PeerTransport = {
    call: async (_peer, method, body) => {
      calls.push({ method, body });
      return JSON.parse(JSON.stringify(answer)) as unknown;
    },
  };
  return { transport, calls };
}

describe('checkAnswer', () => {
  it.each([
    ['replicate', { applied: 2, ignored: 1, invalid: 0 }, { applied: 2, ignored: 1, invalid: 0 }],
    ['ping', { id: 'peer-b', incarnation: 'b1', membersHash: 'abc' }, { id: 'peer-b', incarnation: 'b1', membersHash: 'abc' }],
    ['ping-req', { ok: true }, { ok: true }],
    ['digest', { match: true }, { match: true }],
    ['digest', { match: false, buckets: 'AAAA' }, { match: false, buckets: 'AAAA' }],
    ['reconcile', { records: [record], want: ['default/orders/i-2'] }, { records: [record], want: ['default/orders/i-2'] }],
    ['snapshot', { records: [record], nextBucket: 256, members: [peer], settled: true }, { records: [record], nextBucket: 256, members: [peer], settled: true }],
    ['snapshot', { records: [], nextBucket: null, members: [], settled: false }, { records: [], nextBucket: null, members: [], settled: false }],
  ] as const)('passes a well-formed %s answer through as it is', (method, answer, expected) => {
    expect(checkAnswer(method as PeerMethod, answer)).toEqual(expected);
  });

  it.each([
    ['replicate', 'done', {}],
    ['replicate', { applied: -1, ignored: 'x', invalid: 3 }, { invalid: 3 }],
    ['ping-req', null, { ok: false }],
    ['ping-req', { ok: 'yes' }, { ok: false }],
    ['digest', { match: 1, buckets: 7 }, { match: true }],
    ['digest', { buckets: 'AAAA' }, { match: false, buckets: 'AAAA' }],
    ['reconcile', { records: 'all', want: ['default/orders/i-2', 3, null] }, { records: [], want: ['default/orders/i-2'] }],
    ['reconcile', {}, { records: [], want: [] }],
    ['snapshot', { records: {}, nextBucket: '3', members: [] }, { records: [], nextBucket: null, members: [], settled: true }],
    // A peer of an older version sends no settled field: settled, as every page was before; only false is unsettled.
    ['snapshot', { records: [record], nextBucket: 256, members: [peer] }, { records: [record], nextBucket: 256, members: [peer], settled: true }],
    ['snapshot', { records: [], nextBucket: null, members: [], settled: 'no' }, { records: [], nextBucket: null, members: [], settled: true }],
  ] as const)('reads a %s answer no caller relies on the details of as callers always did: %j', (method, answer, expected) => {
    expect(checkAnswer(method as PeerMethod, answer)).toEqual(expected);
  });

  it.each([
    ['ping', { membersHash: 'abc' }, /id: must be a peer id/],
    ['ping', [], /ping answer: must be a JSON object/],
    ['digest', null, /digest answer: must be a JSON object/],
    ['reconcile', [], /reconcile answer: must be a JSON object/],
    ['snapshot', 'page', /snapshot answer: must be a JSON object/],
    ['snapshot', { records: [], nextBucket: null }, /members: must be an array/],
    ['snapshot', { records: [], nextBucket: null, members: [{ id: 'peer-c', url: 'ftp://x', region: '', zone: '' }] }, /members\[0\]\.url/],
  ] as const)('refuses a %s answer its caller cannot use: %j', (method, answer, message) => {
    expect(() => checkAnswer(method as PeerMethod, answer)).toThrow(message);
  });

  it('leaves each record of a list to the inbox, which counts the bad ones', () => {
    const answer = checkAnswer('reconcile', { records: [record, 'not a record', null], want: [] });
    expect(answer.records).toEqual([record, 'not a record', null]);
  });

  it('has a check for every peer method', () => {
    for (const method of peerMethods) expect(() => checkAnswer(method, {})).not.toThrow(TypeError);
  });
});

describe('callPeer', () => {
  it('sends the request as it is and returns the checked answer', async () => {
    const { transport, calls } = answering({ records: 'none', nextBucket: 16, members: [peer], extra: true });
    const page = await callPeer(transport, peer, 'snapshot', { from: 'peer-a', fromBucket: 0, bucketSpan: 16 }, { timeoutMs: 100 });
    expect(calls).toEqual([{ method: 'snapshot', body: { from: 'peer-a', fromBucket: 0, bucketSpan: 16 } }]);
    expect(page).toEqual({ records: [], nextBucket: 16, members: [peer], settled: true });
  });

  it('types the request by the call name', async () => {
    const { transport } = answering({ match: true });
    // @ts-expect-error a digest request carries the root hash
    await callPeer(transport, peer, 'digest', { from: 'peer-a', fromBucket: 0, bucketSpan: 16 }, { timeoutMs: 100 });
    const answer = await callPeer(transport, peer, 'digest', { from: 'peer-a', root: 'r' }, { timeoutMs: 100 });
    // @ts-expect-error a digest answer has no records
    expect(answer.records).toBeUndefined();
    expect(answer.match).toBe(true);
  });
});
