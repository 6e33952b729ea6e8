import type { Instance } from './types.js';

/** What changed between what a subscriber knows and what the cache holds now. */
export interface Transitions {
  up: Instance[];
  down: Instance[];
  changed: Instance[];
}

/** Available to callers: listed and UP. (Listed means the lease is live or held by a guard.) */
export function isAvailable(instance: Instance): boolean {
  return instance.status === 'UP';
}

/** What identifies a state of an instance worth telling about: its write version and whether a guard holds it. */
function fingerprint(instance: Instance): string {
  return `${instance.version}|${instance.evictionHeld ? 1 : 0}`;
}

const byId = (a: Instance, b: Instance) => (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0);

/**
 * Compares, for the given ids, `known` (the available instances a subscriber was told about)
 * with `current` (every instance the cache lists now, any status): an instance is up when it
 * becomes available, down when it stops being available (gone, or no longer UP), changed when
 * it stays available with another version. Pure; the results are sorted by id.
 */
export function diffAvailable(known: ReadonlyMap<string, Instance>, current: ReadonlyMap<string, Instance>, ids: Iterable<string>): Transitions {
  const result: Transitions = { up: [], down: [], changed: [] };
  for (const id of new Set(ids)) {
    const before = known.get(id);
    const now = current.get(id);
    const available = now !== undefined && isAvailable(now);
    if (before && !available) result.down.push(before);
    else if (!before && available) result.up.push(now);
    else if (before && available && fingerprint(before) !== fingerprint(now)) result.changed.push(now);
  }
  result.up.sort(byId);
  result.down.sort(byId);
  result.changed.sort(byId);
  return result;
}

/** Brings `known` to what `transitions` says. */
export function applyTransitions(known: Map<string, Instance>, transitions: Transitions): void {
  for (const instance of transitions.down) known.delete(instance.instanceId);
  for (const instance of [...transitions.up, ...transitions.changed]) known.set(instance.instanceId, instance);
}

export function isEmpty(transitions: Transitions): boolean {
  return transitions.up.length + transitions.down.length + transitions.changed.length === 0;
}

export function sortedById(instances: Iterable<Instance>): Instance[] {
  return [...instances].sort(byId);
}
