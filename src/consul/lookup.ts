import type { RegistryReads } from '../app/reads.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { findCheck } from './check-update.js';
import type { ConsulWrites } from './writes.js';

/**
 * Consul's agent routes name an instance by its service ID alone, and a check by its check ID
 * alone; our records are keyed by namespace, service and instance id. These find the record
 * within a namespace: a service ID is looked up in each service of the namespace (a map
 * lookup per service, no scan of instances), a check ID first where this peer remembers it,
 * then through its default form `service:<ID>` (or `service:<ID>:<n>`), and only then by a
 * scan of the namespace's served instances. They read through the application layer's reads.
 */
export type InstanceFinder = Pick<RegistryReads, 'find' | 'views'>;

export function findByServiceId(reads: InstanceFinder, namespace: string, instanceId: string): StoredInstance | undefined {
  for (const service of reads.views.servicesOf(namespace)) {
    const entry = reads.find({ namespace, service, instanceId });
    if (entry && !entry.hidden) return entry;
  }
  return undefined;
}

export function keyOf(entry: StoredInstance): InstanceKey {
  const { namespace, service, instanceId } = entry.record;
  return { namespace, service, instanceId };
}

export function findByCheckId(reads: InstanceFinder, writes: ConsulWrites, namespace: string, checkId: string): StoredInstance | undefined {
  const holds = (entry: StoredInstance | undefined): entry is StoredInstance => entry !== undefined && !entry.hidden && findCheck(entry.record.data, checkId) !== undefined;
  const remembered = writes.ownerOfCheck(checkId);
  if (remembered && remembered.namespace === namespace) {
    const entry = reads.find(remembered);
    if (holds(entry)) return entry;
  }
  if (checkId.startsWith('service:')) {
    const rest = checkId.slice('service:'.length);
    const suffix = /^(.+):\d+$/.exec(rest);
    for (const candidate of suffix ? [rest, suffix[1]!] : [rest]) {
      const entry = findByServiceId(reads, namespace, candidate);
      if (holds(entry)) return entry;
    }
  }
  for (const service of reads.views.servicesOf(namespace)) {
    for (const entry of reads.views.get(namespace, service).served) if (holds(entry)) return entry;
  }
  return undefined;
}
