import type { StoreReader } from '../app/reads.js';
import type { StoreChange } from '../registry/store.js';
import type { InstanceKey, InstanceRecord } from '../registry/types.js';
import { consulExtensionOf } from './fields.js';

/**
 * Consul's agent routes name an instance by its service ID alone and a check by its check ID
 * alone, both unique per agent (here: per namespace); our records are keyed by namespace,
 * service and instance id, and two services may each have an instance `X`. This directory
 * maps, per namespace, each Consul service ID and each TTL check ID to the instance that the
 * Consul API registered with it (the record's `consul` extension, fields.ts), so that:
 * - a deregister or register of ID `X` acts on the instance Consul registered as `X`, never on
 *   another service's instance that happens to have that id;
 * - a check update finds its instance in one map lookup, known or unknown id alike, with no
 *   walk over the namespace's instances (an unknown id cost 24 ms at 20,000 instances).
 * It follows the store's change feed through the application layer's reads (local writes,
 * replicated writes, repairs and the start-up sync alike), so every peer knows every Consul ID.
 * Two records with the same ID (registered on two peers at once, before either saw the other)
 * are both kept; `serviceIds` answers both and the caller picks.
 */
export class ConsulDirectory {
  private readonly byServiceId = new Map<string, InstanceKey[]>();
  private readonly byCheckId = new Map<string, InstanceKey[]>();
  private readonly unsubscribe: () => void;

  constructor(store: Pick<StoreReader, 'allServices' | 'onChange'>) {
    this.unsubscribe = store.onChange((change) => this.onChange(change));
    for (const service of store.allServices()) for (const entry of service.instances.values()) this.add(entry.record);
  }

  /** The instances the Consul API registered with service ID `id` in `namespace` (usually one). */
  serviceIds(namespace: string, id: string): readonly InstanceKey[] {
    return this.byServiceId.get(entryKey(namespace, id)) ?? [];
  }

  /** The instances that hold TTL check `checkId` in `namespace` (usually one). */
  checkIds(namespace: string, checkId: string): readonly InstanceKey[] {
    return this.byCheckId.get(entryKey(namespace, checkId)) ?? [];
  }

  /** Stops following the store. */
  close(): void {
    this.unsubscribe();
  }

  private onChange(change: StoreChange): void {
    const { record } = change.entry;
    // A local change (a hide, a hold) keeps the record: nothing to move.
    if (change.before === record) return;
    if (change.before) this.remove(change.before);
    this.add(record);
  }

  private add(record: InstanceRecord): void {
    if (record.deleted !== null) return;
    const extension = consulExtensionOf(record.data);
    if (!extension) return;
    const key = { namespace: record.namespace, service: record.service, instanceId: record.instanceId };
    insert(this.byServiceId, entryKey(record.namespace, extension.id), key);
    for (const check of extension.checks) insert(this.byCheckId, entryKey(record.namespace, check.id), key);
  }

  private remove(record: InstanceRecord): void {
    if (record.deleted !== null) return;
    const extension = consulExtensionOf(record.data);
    if (!extension) return;
    drop(this.byServiceId, entryKey(record.namespace, extension.id), record);
    for (const check of extension.checks) drop(this.byCheckId, entryKey(record.namespace, check.id), record);
  }
}

function entryKey(namespace: string, id: string): string {
  return `${namespace}\n${id}`;
}

function sameKey(a: InstanceKey, b: InstanceKey): boolean {
  return a.instanceId === b.instanceId && a.service.toLowerCase() === b.service.toLowerCase() && a.namespace === b.namespace;
}

function insert(map: Map<string, InstanceKey[]>, id: string, key: InstanceKey): void {
  const keys = map.get(id);
  if (!keys) map.set(id, [key]);
  else if (!keys.some((known) => sameKey(known, key))) keys.push(key);
}

function drop(map: Map<string, InstanceKey[]>, id: string, key: InstanceKey): void {
  const keys = map.get(id);
  if (!keys) return;
  const left = keys.filter((known) => !sameKey(known, key));
  if (left.length === 0) map.delete(id);
  else map.set(id, left);
}
