import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wantedSubBuckets } from '../../../src/replication/reconcile-parts.js';
import { bucketOfSub, SUB_BUCKETS } from '../../../src/registry/digest.js';

describe('wantedSubBuckets', () => {
  it('lists exactly the sub-buckets the two sets select, and nothing for numbers out of range', () => {
    const BUCKETS = 64;
    const number = fc.oneof(fc.integer({ min: -5, max: BUCKETS * SUB_BUCKETS + 5 }), fc.constantFrom(0.5, Number.NaN, 2 ** 40));
    fc.assert(
      fc.property(fc.array(number, { maxLength: 30 }), fc.option(fc.array(number, { maxLength: 200 }), { nil: undefined }), (bucketList, subList) => {
        const buckets = new Set(bucketList);
        const subBuckets = subList && new Set(subList);
        const wanted = wantedSubBuckets(BUCKETS, buckets, subBuckets);
        expect(wanted.length).toBe(BUCKETS * SUB_BUCKETS);
        for (let sub = 0; sub < wanted.length; sub++) {
          const selected = buckets.has(bucketOfSub(sub)) && (subBuckets === undefined || subBuckets.has(sub));
          expect(wanted[sub]).toBe(selected ? 1 : 0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
