import { describe, expect, it } from 'vitest';
import { ago, duration, guardNotices, peerSummary, type ClusterView, type GuardsView } from '../../../src/ui/words.js';

const guards = (over: { sp?: Partial<GuardsView['selfPreservation']>; pg?: Partial<GuardsView['partitionGuard']>; held?: number } = {}): GuardsView => ({
  selfPreservation: {
    active: false, mode: 'auto', reason: 'renewals at or above the threshold', renewalsInWindow: 100, expectedRenewalsInWindow: 100,
    thresholdRatio: 0.85, ownedInstances: 20, windowMs: 60_000, sinceMs: null, ...over.sp,
  },
  partitionGuard: { active: false, mode: 'auto', reason: 'few or no instances owned by down peers', downOwnedShare: 0, ratio: 0.15, sinceMs: null, ...over.pg },
  held: { selfPreservation: over.held ?? 0, partitionGuard: 0, serviceCap: 0, runCap: 0 },
});

describe('plain words', () => {
  it.each([
    [0, '0ms'], [850, '850ms'], [1_500, '1.5s'], [12_400, '12s'], [250_000, '4m10s'], [3_600_000 * 3 + 5 * 60_000, '3h05m'],
  ])('duration(%i) is %s', (ms, text) => expect(duration(ms)).toBe(text));

  it('says how long ago', () => {
    expect(ago(null, 10_000)).toBe('never');
    expect(ago(7_500, 10_000)).toBe('2.5s ago');
  });

  it('has no banner when the guards are off by their own rule', () => {
    expect(guardNotices(guards(), 0)).toEqual([]);
  });

  it('explains self-preservation in plain words, with the figures and the peer\'s own reason', () => {
    const [notice] = guardNotices(guards({ sp: { active: true, renewalsInWindow: 12, expectedRenewalsInWindow: 240, sinceMs: 40_000, reason: 'received 12 renewals...' }, held: 7 }), 100_000);
    expect(notice!.level).toBe('alert');
    expect(notice!.title).toBe('Self-preservation is ON: this peer has stopped evicting instances');
    expect(notice!.body).toContain('it received 12 heartbeats');
    expect(notice!.body).toContain('should have sent about 240 (it needs 85% of them)');
    expect(notice!.body).toContain('Only instances that were heartbeating count');
    expect(notice!.body).toContain('network problem');
    expect(notice!.body).toContain('7 expired instance(s) are being kept');
    expect(notice!.body).toContain('On for 1m00s');
    expect(notice!.detail).toBe('received 12 renewals...');
  });

  it('explains the partition guard, and says when an operator switched a guard off', () => {
    const notices = guardNotices(guards({ sp: { mode: 'off', reason: 'switched off by an operator' }, pg: { active: true, downOwnedShare: 0.4, sinceMs: 0 } }), 5_000);
    expect(notices.map((n) => n.level)).toEqual(['info', 'warning']);
    expect(notices[0]!.title).toContain('switched off by an operator');
    expect(notices[1]!.body).toContain('own 40% of the registry (the guard acts at 15%)');
  });

  it('summarises peers by state', () => {
    const cluster = { peers: [{ state: 'up' }, { state: 'down' }, { state: 'suspect' }] } as unknown as ClusterView;
    expect(peerSummary(cluster)).toBe('4 peers: 2 up, 1 suspect, 1 down');
    expect(peerSummary({ peers: [] } as unknown as ClusterView)).toBe('1 peer: 1 up');
  });
});
