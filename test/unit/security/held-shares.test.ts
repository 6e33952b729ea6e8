import { describe, expect, it } from 'vitest';
import { HeldShares, principalCapOf, shareOwnerOf, type HeldRefusal, type HeldSlot } from '../../../src/security/held-shares.js';

const pool = (peerMax: number, principalMax: number): HeldShares =>
  new HeldShares({ what: 'xDS streams', peerSetting: 'xds.streamsMax', peerMax, principalMax });

const slot = (taken: HeldSlot | HeldRefusal): HeldSlot => {
  if (!taken.held) throw new Error(`refused: ${taken.message}`);
  return taken;
};

describe('principalCapOf', () => {
  it.each([
    // peerMax, ratio -> cap
    [10_000, 0.5, 5_000],
    [10_000, 0.25, 2_500],
    [3, 0.5, 1],
    [1, 0.1, 1],
    [100, 1, 100],
    [100, 2, 100],
  ])('%d at ratio %d: %d', (peerMax, ratio, cap) => {
    expect(principalCapOf(peerMax, ratio)).toBe(cap);
  });
});

describe('shareOwnerOf', () => {
  it('is the token when there is one, else the address', () => {
    expect(shareOwnerOf('10.0.0.7', 'reader')).toBe('token:reader');
    expect(shareOwnerOf('10.0.0.7', undefined)).toBe('address:10.0.0.7');
  });
});

describe('HeldShares', () => {
  it('one principal holding its share leaves room for another', () => {
    const shares = pool(4, 2);
    slot(shares.take('token:a'));
    slot(shares.take('token:a'));
    const third = shares.take('token:a');
    expect(third.held).toBe(false);
    expect((third as HeldRefusal).cap).toBe('principal');
    expect((third as HeldRefusal).message).toContain('token a already holds 2 xDS streams');
    slot(shares.take('token:b'));
    slot(shares.take('address:10.0.0.9'));
    expect(shares.held).toBe(4);
  });

  it('refuses past the peer cap whoever asks, naming the setting', () => {
    const shares = pool(2, 2);
    slot(shares.take('token:a'));
    slot(shares.take('token:b'));
    const refused = shares.take('token:c') as HeldRefusal;
    expect(refused.held).toBe(false);
    expect(refused.cap).toBe('peer');
    expect(refused.message).toContain('xds.streamsMax');
  });

  it('a release frees one slot once, however often it is called', () => {
    const shares = pool(10, 2);
    const first = slot(shares.take('address:10.0.0.1'));
    slot(shares.take('address:10.0.0.1'));
    first.release();
    first.release();
    expect(shares.heldBy('address:10.0.0.1')).toBe(1);
    expect(shares.held).toBe(1);
    slot(shares.take('address:10.0.0.1'));
    expect(shares.take('address:10.0.0.1').held).toBe(false);
  });

  it('forgets an owner that holds nothing', () => {
    const shares = pool(10, 5);
    const held = slot(shares.take('token:a'));
    held.release();
    expect(shares.heldBy('token:a')).toBe(0);
    expect(shares.heaviest(5)).toEqual([]);
  });

  it('lists the heaviest holders, most first, at most the number asked', () => {
    const shares = pool(100, 50);
    const counts: Record<string, number> = { 'token:a': 3, 'token:b': 7, 'token:c': 1, 'token:d': 5 };
    for (const [owner, count] of Object.entries(counts)) for (let i = 0; i < count; i += 1) slot(shares.take(owner));
    expect(shares.heaviest(2)).toEqual([
      { owner: 'token:b', held: 7 },
      { owner: 'token:d', held: 5 },
    ]);
    expect(shares.heaviest(10).map((h) => h.owner)).toEqual(['token:b', 'token:d', 'token:a', 'token:c']);
  });
});
