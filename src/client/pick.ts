import { invalidArgument } from './errors.js';
import type { PickStrategy } from './types.js';

/** What a strategy may draw on: a pick counter (round-robin) and a random number in [0, 1). */
export interface PickDraw {
  /** How many picks this service (with this strategy) had before this one. */
  counter: number;
  random: number;
}

/** The fields the strategies read. */
export interface Pickable {
  weight: number;
  zone: string;
  region?: string | null;
}

/**
 * The nearest candidates to a client in `zone` (of `region`): those of the zone; else those of
 * the region (instances carry the region the peers give their zone); else all of them. The
 * same order as `GET /v1/services/{service}?near=ZONE`.
 */
export function nearest<T extends Pickable>(candidates: readonly T[], zone: string, region: string | undefined): readonly T[] {
  const local = candidates.filter((candidate) => candidate.zone === zone);
  if (local.length > 0) return local;
  if (region !== undefined) {
    const regional = candidates.filter((candidate) => candidate.region === region);
    if (regional.length > 0) return regional;
  }
  return candidates;
}

/**
 * Chooses one of `candidates` (the available instances, in a stable order) by `strategy`.
 * Pure: the same candidates, strategy and draw always give the same answer. Undefined when
 * there is nothing to choose (no candidate; for `weighted`, no weight above 0).
 */
export function pickInstance<T extends Pickable>(candidates: readonly T[], strategy: PickStrategy, draw: PickDraw): T | undefined {
  if (candidates.length === 0) return undefined;
  if (typeof strategy === 'object') {
    return pickInstance(nearest(candidates, strategy.zone, strategy.region), strategy.fallback ?? 'round-robin', draw);
  }
  switch (strategy) {
    case 'round-robin':
      return candidates[positiveModulo(draw.counter, candidates.length)];
    case 'random':
      return candidates[Math.min(candidates.length - 1, Math.floor(draw.random * candidates.length))];
    case 'weighted':
      return pickWeighted(candidates, draw.random);
  }
}

/** A weight-proportional choice: the candidate whose share of the total weight holds `random`. */
function pickWeighted<T extends Pickable>(candidates: readonly T[], random: number): T | undefined {
  let totalWeight = 0;
  for (const candidate of candidates) totalWeight += usableWeight(candidate.weight);
  if (totalWeight <= 0) return undefined;
  const target = random * totalWeight;
  let cumulative = 0;
  let last: T | undefined;
  for (const candidate of candidates) {
    const weight = usableWeight(candidate.weight);
    if (weight === 0) continue;
    cumulative += weight;
    last = candidate;
    if (target < cumulative) return candidate;
  }
  // Rounding at the top end: the last candidate with a weight.
  return last;
}

function usableWeight(weight: number): number {
  return Number.isFinite(weight) && weight > 0 ? weight : 0;
}

function positiveModulo(value: number, modulus: number): number {
  return ((Math.floor(value) % modulus) + modulus) % modulus;
}

/** Checks a strategy given by a caller (it may come from untyped code or a config file). */
export function parseStrategy(value: unknown, field = 'strategy', depth = 0): PickStrategy {
  if (value === 'round-robin' || value === 'random' || value === 'weighted') return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && depth < 8) {
    const { zone, region, fallback, ...rest } = value as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw invalidArgument(field, `unknown field ${JSON.stringify(unknown[0])}`);
    if (typeof zone !== 'string') throw invalidArgument(`${field}.zone`, 'must be a string');
    if (region !== undefined && typeof region !== 'string') throw invalidArgument(`${field}.region`, 'must be a string');
    return {
      zone,
      ...(region === undefined ? {} : { region }),
      ...(fallback === undefined ? {} : { fallback: parseStrategy(fallback, `${field}.fallback`, depth + 1) }),
    };
  }
  throw invalidArgument(field, `must be 'round-robin', 'random', 'weighted' or {zone, region?, fallback?}; got ${JSON.stringify(value)}`);
}

/** A stable name for a strategy, so that each (service, strategy) keeps its own round-robin counter. */
export function strategyKey(strategy: PickStrategy): string {
  return typeof strategy === 'string' ? strategy : `zone:${strategy.zone}@${strategy.region ?? ''}>${strategyKey(strategy.fallback ?? 'round-robin')}`;
}
