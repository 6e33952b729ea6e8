import { describe, expect, it } from 'vitest';
import { assessPartitionGuard } from '../../../src/lease/partition-guard.js';

describe('assessPartitionGuard', () => {
  it.each([
    ['an empty registry', { records: 0, downOwned: 0, downRegionOwned: 0 }, 0.15, 'auto', false],
    ['nobody down', { records: 100, downOwned: 0, downRegionOwned: 0 }, 0.15, 'auto', false],
    ['a small share down', { records: 100, downOwned: 14, downRegionOwned: 0 }, 0.15, 'auto', false],
    ['exactly at the ratio', { records: 100, downOwned: 15, downRegionOwned: 0 }, 0.15, 'auto', true],
    ['one peer of three down', { records: 99, downOwned: 33, downRegionOwned: 0 }, 0.15, 'auto', true],
    ['switched off by configuration', { records: 99, downOwned: 33, downRegionOwned: 0 }, 0, 'auto', false],
    ['switched off by an operator', { records: 99, downOwned: 33, downRegionOwned: 0 }, 0.15, 'off', false],
    ['a whole other region down, however small its share', { records: 1_000, downOwned: 10, downRegionOwned: 10 }, 0.15, 'auto', true],
    ['a whole region down, but the guard switched off', { records: 1_000, downOwned: 10, downRegionOwned: 10 }, 0, 'auto', false],
  ] as const)('%s', (_name, figures, ratio, mode, active) => {
    expect(assessPartitionGuard(figures, ratio, mode).active).toBe(active);
  });

  it('reports the share', () => {
    expect(assessPartitionGuard({ records: 200, downOwned: 50, downRegionOwned: 0 }, 0.15, 'auto').share).toBe(0.25);
  });
});
