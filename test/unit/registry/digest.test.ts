import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BucketDigest, bucketOf, bucketOfSub, hash64, SUB_BUCKETS, subBucketOf } from '../../../src/registry/digest.js';

describe('BucketDigest', () => {
  it('does not depend on the order entries were added in', () => {
    const a = new BucketDigest(64);
    const b = new BucketDigest(64);
    const entries = Array.from({ length: 200 }, (_, i) => [`ns/svc/${i}`, `v${i}`] as const);
    for (const [key, version] of entries) a.toggle(key, subBucketOf(key, a.bucketCount), version, false);
    for (const [key, version] of [...entries].reverse()) b.toggle(key, subBucketOf(key, b.bucketCount), version, false);
    expect(a.rootHash()).toBe(b.rootHash());
    expect(a.differingBuckets(b.encodeBuckets())).toEqual([]);
  });

  it('finds exactly the bucket of a changed entry', () => {
    const a = new BucketDigest(64);
    const b = new BucketDigest(64);
    for (const digest of [a, b]) for (let i = 0; i < 100; i++) digest.toggle(`k${i}`, subBucketOf(`k${i}`, digest.bucketCount), 'v1', false);
    b.toggle('k7', subBucketOf('k7', b.bucketCount), 'v1', false);
    b.toggle('k7', subBucketOf('k7', b.bucketCount), 'v2', false);
    expect(a.rootHash()).not.toBe(b.rootHash());
    expect(a.differingBuckets(b.encodeBuckets())).toEqual([bucketOf('k7', 64)]);
    // Within that bucket, exactly the sub-bucket of the changed entry differs.
    const buckets = [bucketOf('k7', 64), (bucketOf('k7', 64) + 1) % 64];
    expect(a.differingSubBuckets(buckets, b.encodeSubBuckets(buckets))).toEqual([subBucketOf('k7', 64)]);
  });

  it('puts a key in a sub-bucket of its own bucket, and splits each bucket evenly', () => {
    const counts = new Array<number>(4 * SUB_BUCKETS).fill(0);
    for (let i = 0; i < 32_000; i++) {
      const key = `default/svc/${i}`;
      const sub = subBucketOf(key, 4);
      expect(bucketOfSub(sub)).toBe(bucketOf(key, 4));
      counts[sub]! += 1;
    }
    for (const count of counts) expect(count).toBeGreaterThan(400);
  });

  it('keeps every bucket hash the XOR of its sub-bucket hashes, whatever was toggled (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.constantFrom('v1', 'v2', 'v3'), fc.boolean()), { maxLength: 120 }), (toggles) => {
        const digest = new BucketDigest(8);
        const mirror = new BucketDigest(8);
        for (const [k, version, deleted] of toggles) digest.toggle(`ns/s/${k}`, subBucketOf(`ns/s/${k}`, 8), version, deleted);
        // The same toggles in the reverse order give the same sub-bucket hashes.
        for (const [k, version, deleted] of [...toggles].reverse()) mirror.toggle(`ns/s/${k}`, subBucketOf(`ns/s/${k}`, 8), version, deleted);
        const all = [0, 1, 2, 3, 4, 5, 6, 7];
        expect(digest.differingSubBuckets(all, mirror.encodeSubBuckets(all))).toEqual([]);
        const subs = Buffer.from(digest.encodeSubBuckets(all), 'base64');
        const buckets = Buffer.from(digest.encodeBuckets(), 'base64');
        for (const bucket of all) {
          let high = 0;
          let low = 0;
          for (let n = 0; n < SUB_BUCKETS; n++) {
            high = (high ^ subs.readUInt32BE((bucket * SUB_BUCKETS + n) * 8)) >>> 0;
            low = (low ^ subs.readUInt32BE((bucket * SUB_BUCKETS + n) * 8 + 4)) >>> 0;
          }
          expect([high, low]).toEqual([buckets.readUInt32BE(bucket * 8), buckets.readUInt32BE(bucket * 8 + 4)]);
        }
      }),
    );
  });

  it('refuses sub-bucket hashes of another size', () => {
    const digest = new BucketDigest(16);
    expect(digest.differingSubBuckets([1, 2], digest.encodeSubBuckets([1]))).toBeNull();
  });

  it('returns to the empty digest when every entry is toggled out', () => {
    const digest = new BucketDigest(16);
    const empty = digest.rootHash();
    digest.toggle('x', subBucketOf('x', digest.bucketCount), 'v', true);
    expect(digest.rootHash()).not.toBe(empty);
    digest.toggle('x', subBucketOf('x', digest.bucketCount), 'v', true);
    expect(digest.rootHash()).toBe(empty);
  });

  it('tells a tombstone apart from a live record of the same version', () => {
    const live = new BucketDigest(16);
    const dead = new BucketDigest(16);
    live.toggle('x', subBucketOf('x', live.bucketCount), 'v', false);
    dead.toggle('x', subBucketOf('x', dead.bucketCount), 'v', true);
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
