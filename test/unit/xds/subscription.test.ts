import { describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/xds/subscription.js';

const request = (names: string[], nonce = '', error = false) => ({ resource_names: names, response_nonce: nonce, error_detail: error ? { message: 'bad' } : null });

describe('Subscription (one type of one ADS stream)', () => {
  it('classifies requests: the first, an ACK and a NACK of the latest response, a stale one', () => {
    const subscription = new Subscription('listener');
    expect(subscription.apply(request(['a']))).toBe('initial');
    subscription.nonce = '1';
    expect(subscription.apply(request(['a'], '1'))).toBe('ack');
    expect(subscription.apply(request(['a'], '1', true))).toBe('nack');
    expect(subscription.apply(request(['a', 'b'], '0'))).toBe('stale');
    // A stale request changes nothing: the answer to the newer response carries the names.
    expect([...subscription.names]).toEqual(['a']);
  });

  it('takes the names of every request that is not stale, forgetting what was sent of dropped ones', () => {
    const subscription = new Subscription('endpoints');
    subscription.apply(request(['a', 'b']));
    subscription.sent.set('a', 1).set('b', 2);
    subscription.apply(request(['b', 'c']));
    expect([...subscription.names]).toEqual(['b', 'c']);
    expect([...subscription.sent.keys()]).toEqual(['b']);
    expect(subscription.wants('c')).toBe(true);
    expect(subscription.wants('a')).toBe(false);
  });

  it.each([
    ['a first request naming nothing (legacy wildcard)', [[]], true],
    ['an explicit *', [['a'], ['*']], true],
    ['names after a wildcard', [[], ['a']], false],
    ['nothing after names (unsubscribed)', [['a'], []], false],
    ['nothing again on a wildcard', [[], []], true],
  ])('is a wildcard after %s: %s', (_what, requests, wildcard) => {
    const subscription = new Subscription('cluster');
    for (const names of requests as string[][]) subscription.apply(request(names));
    expect(subscription.wildcard).toBe(wildcard);
    expect(subscription.wants('anything')).toBe(wildcard);
  });
});

describe('Subscription.sizeWith', () => {
  it('counts the distinct names a list would hold, the wildcard not among them', () => {
    const subscription = new Subscription('endpoints');
    subscription.apply(request(['a', 'b']));
    expect(subscription.sizeWith(['a', 'b'])).toBe(2);
    expect(subscription.sizeWith(['b', 'a', 'a'])).toBe(2);
    expect(subscription.sizeWith(['a', 'b', 'c', '*'])).toBe(3);
    expect(subscription.sizeWith([])).toBe(0);
    // Duplicates never pass for the names held.
    expect(subscription.sizeWith(['a', 'a'])).toBe(1);
  });
});
