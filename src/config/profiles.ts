import type { ClusterSettings } from './settings.js';

export const profileNames = ['lan', 'wan', 'local'] as const;
export type ProfileName = (typeof profileNames)[number];

export interface Profile {
  description: string;
  /** What differs from the base defaults of config/settings.ts; everything else is the base. */
  overrides: Partial<ClusterSettings>;
}

/**
 * Named starting points, as memberlist ships DefaultLANConfig / DefaultWANConfig /
 * DefaultLocalConfig. A profile only sets defaults: any setting in the file, the environment
 * or a flag still wins.
 */
export const profiles: Record<ProfileName, Profile> = {
  lan: {
    description: 'Peers in one data centre or region, sub-millisecond to a few milliseconds apart. The base defaults.',
    overrides: {},
  },
  wan: {
    description:
      'Peers spread over regions tens to hundreds of milliseconds apart: slower timings so that a slow link is not taken for a dead peer.',
    overrides: {
      probeIntervalMs: 2_000,
      probeTimeoutMs: 1_500,
      suspicionTimeoutMs: 15_000,
      ownerDownGraceMs: 120_000,
      antiEntropyIntervalMs: 10_000,
      replicationBatchDelayMs: 20,
      crossRegionBatchDelayMs: 250,
      crossRegionAntiEntropyIntervalMs: 30_000,
      peerCallTimeoutMs: 15_000,
    },
  },
  local: {
    description: 'Every peer on one machine (tests, laptops): fast timings so that failures show within a second or two.',
    overrides: {
      heartbeatIntervalMs: 1_000,
      leaseDurationMs: 3_000,
      evictionIntervalMs: 250,
      probeIntervalMs: 250,
      probeTimeoutMs: 200,
      suspicionTimeoutMs: 1_500,
      ownerDownGraceMs: 15_000,
      antiEntropyIntervalMs: 1_000,
      crossRegionAntiEntropyIntervalMs: 2_000,
      crossRegionBatchDelayMs: 20,
      peerCallTimeoutMs: 2_000,
      replicationRetryMaxMs: 1_000,
    },
  },
};
