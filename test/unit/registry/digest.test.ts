import { describe, expect, it } from 'vitest';
import { BucketDigest, bucketOf, hash64 } from '../../../src/registry/digest.js';

describe('BucketDigest', () => {
  it('does not depend on the order entries were added in', () => {
    const a = new BucketDigest(64);
    const b = new BucketDigest(64);
    const entries = Array.from({ length: 200 }, (_, i) => [`ns/svc/${i}`, `v${i}`] as const);
    for (const [key, version] of entries) a.toggle(key, bucketOf(key, a.bucketCount), version, false);
    for (const [key, version] of [...entries].reverse()) b.toggle(key, bucketOf(key, b.bucketCount), version, false);
    expect(a.rootHash()).toBe(b.rootHash());
    expect(a.differingBuckets(b.encodeBuckets())).toEqual([]);
  });

  it('finds exactly the bucket of a changed entry', () => {
    const a = new BucketDigest(64);
    const b = new BucketDigest(64);
    for (const digest of [a, b]) for (let i = 0; i < 100; i++) digest.toggle(`k${i}`, bucketOf(`k${i}`, digest.bucketCount), 'v1', false);
    b.toggle('k7', bucketOf('k7', b.bucketCount), 'v1', false);
    b.toggle('k7', bucketOf('k7', b.bucketCount), 'v2', false);
    expect(a.rootHash()).not.toBe(b.rootHash());
    expect(a.differingBuckets(b.encodeBuckets())).toEqual([bucketOf('k7', 64)]);
  });

  it('returns to the empty digest when every entry is toggled out', () => {
    const digest = new BucketDigest(16);
    const empty = digest.rootHash();
    digest.toggle('x', bucketOf('x', digest.bucketCount), 'v', true);
    expect(digest.rootHash()).not.toBe(empty);
    digest.toggle('x', bucketOf('x', digest.bucketCount), 'v', true);
    expect(digest.rootHash()).toBe(empty);
  });

  it('tells a tombstone apart from a live record of the same version', () => {
    const live = new BucketDigest(16);
    const dead = new BucketDigest(16);
    live.toggle('x', bucketOf('x', live.bucketCount), 'v', false);
    dead.toggle('x', bucketOf('x', dead.bucketCount), 'v', true);
    expect(live.rootHash()).not.toBe(dead.rootHash());
  });

  it('refuses a bucket vector of another size', () => {
    expect(new BucketDigest(16).differingBuckets(new BucketDigest(32).encodeBuckets())).toBeNull();
  });

  it('spreads keys over the buckets', () => {
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 16_000; i++) counts[bucketOf(`default/svc/${i}`, 16)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(hash64('a')).not.toEqual(hash64('b'));
  });
});
