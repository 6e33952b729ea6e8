import type { RegistryReads } from '../app/reads.js';
import { readsBudget, yieldToLoop } from '../http/loop-budget.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { findCheck } from './check-update.js';
import type { ConsulDirectory } from './directory.js';
import { ConsulError } from './errors.js';

/**
 * Finding the instance an agent route names by its Consul service ID or check ID, within a
 * namespace, through the directory (directory.ts) and the application layer's reads:
 * - a service ID names the instance the Consul API registered with it; failing that, an
 *   instance registered through /v1 or Eureka with that instance id (the agent routes list
 *   those too), when exactly one service of the namespace has one: with several, the ID is
 *   ambiguous and refused rather than acting on whichever comes first;
 * - a check ID names the instance whose TTL checks hold it: one map lookup, never a walk over
 *   the namespace (instances registered elsewhere have no TTL check to update).
 */
export type InstanceFinder = Pick<RegistryReads, 'find' | 'views'>;

/** The live, served entry of the newest record among `keys` (two only after a concurrent register on two peers). */
function newest(reads: InstanceFinder, keys: readonly InstanceKey[], holds: (entry: StoredInstance) => boolean): StoredInstance | undefined {
  let best: StoredInstance | undefined;
  for (const key of keys) {
    const entry = reads.find(key);
    if (entry && !entry.hidden && entry.record.deleted === null && holds(entry) && (!best || entry.record.version > best.record.version)) best = entry;
  }
  return best;
}

/** The instance the Consul API registered with service ID `id`, if any (no fallback). */
export function findConsulService(reads: InstanceFinder, directory: ConsulDirectory, namespace: string, id: string): StoredInstance | undefined {
  return newest(reads, directory.serviceIds(namespace, id), () => true);
}

/**
 * The instance service ID `id` names (see above); undefined when none; a 409 when only
 * instances registered elsewhere have that id, in more than one service. The fallback looks in
 * every service of the namespace, yielding whenever the peer's reads have held the loop for
 * their budget (loop-budget.ts): an ID Consul never registered (a typo, or an instance of /v1)
 * is a lookup per service, 200,000 of them in a namespace of that many.
 */
export async function findByServiceId(reads: InstanceFinder, directory: ConsulDirectory, namespace: string, id: string): Promise<StoredInstance | undefined> {
  const registered = findConsulService(reads, directory, namespace, id);
  if (registered) return registered;
  const found: StoredInstance[] = [];
  // The list is kept while no service is made or dropped, and replaced (never changed) when one is.
  for (const service of reads.views.servicesOf(namespace)) {
    if (readsBudget.spent()) await yieldToLoop();
    const entry = reads.find({ namespace, service, instanceId: id });
    if (entry && !entry.hidden && entry.record.deleted === null) found.push(entry);
  }
  if (found.length > 1) {
    const services = found.map((entry) => entry.record.service).slice(0, 5).join(', ');
    throw new ConsulError(409, `Service ID "${id.slice(0, 256)}" names instances of several services (${services}) not registered through this API; deregister it through /v1 naming its service`);
  }
  return found[0];
}

export function keyOf(entry: StoredInstance): InstanceKey {
  const { namespace, service, instanceId } = entry.record;
  return { namespace, service, instanceId };
}

/** The instance that holds TTL check `checkId` in `namespace`: one lookup, no scan. */
export function findByCheckId(reads: InstanceFinder, directory: ConsulDirectory, namespace: string, checkId: string): StoredInstance | undefined {
  return newest(reads, directory.checkIds(namespace, checkId), (entry) => findCheck(entry.record.data, checkId) !== undefined);
}
