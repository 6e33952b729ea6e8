import { describe, expect, it } from 'vitest';
import { coreLayout, type ScaleResult } from '../../../bench/scale.js';
import { renderScaleMarkdown } from '../../../bench/scale-report.js';

describe('scale benchmark: core layout', () => {
  it('gives each of five peers two cores of sixteen and the load the six left', () => {
    expect(coreLayout(16, 5)).toEqual({ peerCores: ['0-1', '2-3', '4-5', '6-7', '8-9'], loaderCores: '10-15' });
  });
  it('gives each peer one core when two would leave too few for the load, and shares all cores when even one would not fit', () => {
    expect(coreLayout(8, 5)).toEqual({ peerCores: ['0', '1', '2', '3', '4'], loaderCores: '5-7' });
    expect(coreLayout(6, 5)).toEqual({ peerCores: ['0', '1', '2', '3', '4'], loaderCores: '5' });
    expect(coreLayout(2, 5)).toEqual({ peerCores: ['0-1', '0-1', '0-1', '0-1', '0-1'], loaderCores: '0-1' });
  });
});

describe('scale benchmark: markdown', () => {
  it('shows each phase measured, and why one was skipped', () => {
    const result: ScaleResult = {
      options: { instances: 1_000_000, cores: 16, services: 1_000, peers: 5, heartbeatSeconds: 30, budgetMs: 400_000 },
      machine: { cpus: 16, model: 'test cpu', node: 'v20.0.0' },
      layout: { peerCores: ['0-1'], loaderCores: '10-15', loaders: 6 },
      startedAt: '2026-12-04T00:00:00.000Z',
      durationSeconds: 300,
      onePeer: { idleRssMb: 100, points: [{ instances: 100_000, rssMb: 150 }], slopeBytesPerInstance: 480, aboveIdleBytesPerInstance: 520, rSquared: 0.999, settledRssMb: 140, settledAboveIdleBytesPerInstance: 42, registerPerSecond: 20_000, coldRegisterPerSecond: 9_000, errors: 0 },
      join: { readyMs: 9_000, allListedMs: 9_500, newPeerRssMb: 600, servingPeerCpuSeconds: 7.5 },
      cluster: { skipped: 'needs about 260 s, 100 s left' },
    };
    const page = renderScaleMarkdown(result);
    expect(page).toContain('| one peer: bytes per instance (slope of RSS, least squares) | 480 B (R² 0.999); above idle at 1,000,000: 520 B |');
    expect(page).toContain('| one peer: RSS at the end after 20 s idle | 140 MB: 42 B per instance above idle |');
    expect(page).toContain('| a new peer joins: ready / lists every instance | 9,000 ms / 9,500 ms |');
    expect(page).toContain('| peers with heartbeats | skipped: needs about 260 s, 100 s left |');
  });
});
