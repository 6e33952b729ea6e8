import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SUB_BUCKETS } from '../../../src/registry/digest.js';
import { bucketOfSub } from '../../../src/registry/digest.js';
import { decodeRoundSubBuckets, encodeRoundSubBuckets, RECONCILE_PART_ENTRIES, RECONCILE_PART_SUB_BUCKETS, splitIntoParts } from '../../../src/replication/reconcile-parts.js';

describe('splitIntoParts', () => {
  it('keeps every unit once and in order, each part within both bounds unless one unit alone is over', () => {
    const unitCounts = fc.array(fc.integer({ min: 0, max: RECONCILE_PART_ENTRIES * 1.5 }), { maxLength: 3_000 });
    fc.assert(
      fc.property(unitCounts, fc.constantFrom(1, SUB_BUCKETS), (counts, subBucketsPerUnit) => {
        const units = counts.map((_, index) => index * 7);
        const listedIn = (unit: number) => counts[unit / 7]!;
        const parts = splitIntoParts(units, listedIn, subBucketsPerUnit);
        expect(parts.flat()).toEqual(units);
        for (const part of parts) {
          expect(part.length).toBeGreaterThan(0);
          expect(part.length * subBucketsPerUnit).toBeLessThanOrEqual(RECONCILE_PART_SUB_BUCKETS);
          const listed = part.reduce((sum, unit) => sum + listedIn(unit), 0);
          if (part.length > 1) expect(listed).toBeLessThanOrEqual(RECONCILE_PART_ENTRIES);
        }
        // No two neighbouring parts could have been one.
        for (let i = 1; i < parts.length; i++) {
          const joined = [...parts[i - 1]!, ...parts[i]!];
          const fits = joined.length * subBucketsPerUnit <= RECONCILE_PART_SUB_BUCKETS && joined.reduce((sum, unit) => sum + listedIn(unit), 0) <= RECONCILE_PART_ENTRIES;
          expect(fits).toBe(false);
        }
      }),
    );
  });

  it('cuts by entries where the records are dense, and by sub-buckets where this peer holds none', () => {
    const dense = splitIntoParts([1, 2, 3, 4, 5], () => RECONCILE_PART_ENTRIES / 2, 1);
    expect(dense).toEqual([[1, 2], [3, 4], [5]]);
    const empty = Array.from({ length: RECONCILE_PART_SUB_BUCKETS * 2 + 1 }, (_, n) => n);
    expect(splitIntoParts(empty, () => 0, 1).map((part) => part.length)).toEqual([RECONCILE_PART_SUB_BUCKETS, RECONCILE_PART_SUB_BUCKETS, 1]);
    expect(splitIntoParts([1, 2], () => RECONCILE_PART_ENTRIES * 3, 1)).toEqual([[1], [2]]);
    expect(splitIntoParts([], () => 0, 1)).toEqual([]);
  });
});

describe("a round's sub-buckets on the wire", () => {
  it('decode what was encoded: the sub-buckets of the given buckets, in their order; other lengths are refused', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 4_095 }), { maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 4_096 * SUB_BUCKETS - 1 }), { maxLength: 300 }), (buckets, subs) => {
        const round = encodeRoundSubBuckets(buckets, subs);
        const inBuckets = [...new Set(subs.filter((sub) => buckets.includes(bucketOfSub(sub))))];
        const order = (sub: number) => buckets.indexOf(bucketOfSub(sub)) * SUB_BUCKETS + (sub % SUB_BUCKETS);
        expect(decodeRoundSubBuckets(buckets, round)).toEqual(inBuckets.sort((x, y) => order(x) - order(y)));
        expect(decodeRoundSubBuckets([...buckets, 4_096], round)).toBeUndefined();
      }),
    );
  });
});
