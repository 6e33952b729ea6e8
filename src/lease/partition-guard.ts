import type { Assessment, GuardMode } from './self-preservation.js';

export interface OwnershipFigures {
  /** Records that are not tombstones. */
  records: number;
  /** Of those, the ones whose owner is down from this peer's point of view. */
  downOwned: number;
  /** Of those, the ones whose owner is in another region all of whose peers are down. */
  downRegionOwned: number;
}

/**
 * The partition guard. When the peers that went down own a large share of the registry
 * (`ratio`, 15% by default), it looks more like this peer being cut off than like a mass
 * death: their instances are held (served, not hidden, not swept as orphans) until the
 * owners come back, their clients fail over here (takeovers shrink the share), or an
 * operator switches the guard off. The loss of every peer of another region counts as a
 * partition whatever its share: a region cut off is the classic partition of a multi-region
 * deployment. Pure. A ratio of 0 switches the guard off.
 */
export function assessPartitionGuard(figures: OwnershipFigures, ratio: number, mode: GuardMode): Assessment & { share: number } {
  const share = figures.records === 0 ? 0 : figures.downOwned / figures.records;
  if (mode === 'off') return { active: false, share, reason: 'switched off by an operator' };
  if (ratio <= 0) return { active: false, share, reason: 'disabled in the configuration (ratio 0)' };
  if (figures.downRegionOwned > 0) {
    return {
      active: true,
      share,
      reason: `every peer of another region is down (${figures.downRegionOwned} instances owned there): probably the link between the regions is cut, so their instances are held`,
    };
  }
  if (figures.downOwned > 0 && share >= ratio) {
    return {
      active: true,
      share,
      reason: `peers that are down own ${Math.round(share * 100)}% of the registry (${figures.downOwned} of ${figures.records}), at least ${Math.round(ratio * 100)}%: probably this peer is cut off, so their instances are held`,
    };
  }
  return { active: false, share, reason: 'few or no instances owned by down peers' };
}
