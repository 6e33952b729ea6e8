import { describe, expect, it } from 'vitest';
import { DelaySampler } from '../../../src/replication/delay-sampler.js';

describe('DelaySampler', () => {
  it('answers zeros when empty', () => {
    expect(new DelaySampler(4).summary()).toEqual({ count: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 });
  });

  it('computes percentiles over the samples', () => {
    const sampler = new DelaySampler(1_000);
    for (let i = 1; i <= 100; i++) sampler.add(i);
    expect(sampler.summary()).toEqual({ count: 100, p50Ms: 50, p99Ms: 99, maxMs: 100 });
  });

  it('keeps only the most recent samples', () => {
    const sampler = new DelaySampler(3);
    for (const value of [1_000, 1_000, 1_000, 1, 2, 3]) sampler.add(value);
    expect(sampler.summary()).toEqual({ count: 6, p50Ms: 2, p99Ms: 3, maxMs: 3 });
  });
});
