/**
 * The dashboard's picture of one namespace, fed by the watch stream (`GET /v1/watch`: one
 * snapshot per service, then deltas). Pure: no DOM, no network, no clock (times are passed
 * in), so it is unit-tested in Node and the page only renders what it says. Every update
 * touches only the services and instances it names, so a delta costs the same with 10 or
 * 10,000 instances; the sorted service list is rebuilt only when a service appears or empties.
 */

import { naturalCompare } from './natural-order.js';

export const STATUSES = ['UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE'] as const;
export type Status = (typeof STATUSES)[number];

/** An instance as the API answers it (docs/api.md, "The instance object"). */
export interface Instance {
  namespace: string;
  service: string;
  instanceId: string;
  host: string;
  port: number;
  securePort: number | null;
  status: Status;
  weight: number;
  zone: string;
  metadata: Record<string, string>;
  owner: string;
  version: string;
  leaseDurationMs: number;
  leaseExpiresInMs: number;
  leaseLive: boolean;
  evictionHeld: boolean;
  registeredAtMs: number;
  lastUpdatedAtMs: number;
}

export interface SnapshotEvent {
  namespace: string;
  service: string;
  revision: number;
  instances: Instance[];
}

export interface DeltaEvent {
  namespace: string;
  service: string;
  revision: number;
  added: Instance[];
  changed: Instance[];
  removed: { instanceId: string }[];
}

/** An instance with when its lease figure was read (the lease counts down from there). */
export interface InstanceEntry {
  instance: Instance;
  /** Local time (ms) at which `instance.leaseExpiresInMs` was true. */
  seenAtMs: number;
}

export interface ServiceState {
  name: string;
  revision: number;
  instances: Map<string, InstanceEntry>;
  counts: Record<Status, number>;
  /** Instances an eviction guard keeps listed although their lease ran out. */
  held: number;
}

const zeroCounts = (): Record<Status, number> => ({ UP: 0, DOWN: 0, STARTING: 0, OUT_OF_SERVICE: 0 });

export class RegistryModel {
  readonly services = new Map<string, ServiceState>();
  private sortedNames: string[] | null = [];
  private instanceTotal = 0;

  constructor(readonly namespace: string) {}

  /** Instances listed in the namespace, whatever their status. */
  get total(): number {
    return this.instanceTotal;
  }

  /** Names of the services with at least one instance, in natural order. */
  names(): string[] {
    if (this.sortedNames === null) {
      this.sortedNames = [...this.services.values()].filter((s) => s.instances.size > 0).map((s) => s.name).sort(naturalCompare);
    }
    return this.sortedNames;
  }

  /** Replaces what is known of a service by its snapshot. */
  applySnapshot(event: SnapshotEvent, nowMs: number): void {
    const service = this.service(event.service);
    const wasListed = service.instances.size > 0;
    for (const entry of service.instances.values()) this.forget(service, entry.instance);
    service.instances.clear();
    for (const instance of event.instances) this.remember(service, instance, nowMs);
    service.revision = event.revision;
    if (wasListed !== service.instances.size > 0) this.sortedNames = null;
  }

  /** Applies what changed in a service; a delta older than what is known is ignored. */
  applyDelta(event: DeltaEvent, nowMs: number): void {
    const service = this.service(event.service);
    if (event.revision < service.revision) return;
    const wasListed = service.instances.size > 0;
    for (const { instanceId } of event.removed) {
      const entry = service.instances.get(instanceId);
      if (!entry) continue;
      this.forget(service, entry.instance);
      service.instances.delete(instanceId);
    }
    for (const instance of [...event.added, ...event.changed]) {
      const previous = service.instances.get(instance.instanceId);
      if (previous) this.forget(service, previous.instance);
      this.remember(service, instance, nowMs);
    }
    service.revision = event.revision;
    if (wasListed !== service.instances.size > 0) this.sortedNames = null;
  }

  /**
   * Fresher lease figures for a service's instances (the stream carries none for heartbeats,
   * which are never replicated or notified): read from `GET /v1/services/{s}?status=all`.
   */
  refreshLeases(serviceName: string, instances: readonly Instance[], nowMs: number): void {
    const service = this.services.get(serviceName);
    if (!service) return;
    for (const instance of instances) {
      const entry = service.instances.get(instance.instanceId);
      if (entry && entry.instance.version === instance.version) {
        entry.instance = { ...entry.instance, leaseExpiresInMs: instance.leaseExpiresInMs, leaseLive: instance.leaseLive };
        entry.seenAtMs = nowMs;
      }
    }
  }

  /** A service's instances in natural order of their ids (natural-order.ts), those matching `query` only (see `matches`). */
  instancesOf(serviceName: string, query: string): InstanceEntry[] {
    const service = this.services.get(serviceName);
    if (!service) return [];
    const needle = query.trim().toLowerCase();
    const all = [...service.instances.values()];
    const shown = needle === '' || serviceName.toLowerCase().includes(needle) ? all : all.filter((entry) => matches(entry.instance, needle));
    return shown.sort((a, b) => naturalCompare(a.instance.instanceId, b.instance.instanceId));
  }

  /** Services whose name matches `query`, or that hold an instance that does; all when it is empty. */
  servicesMatching(query: string): ServiceState[] {
    const needle = query.trim().toLowerCase();
    const out: ServiceState[] = [];
    for (const name of this.names()) {
      const service = this.services.get(name)!;
      if (needle === '' || name.toLowerCase().includes(needle)) out.push(service);
      else for (const entry of service.instances.values()) if (matches(entry.instance, needle)) {
        out.push(service);
        break;
      }
    }
    return out;
  }

  private service(name: string): ServiceState {
    let service = this.services.get(name);
    if (!service) {
      service = { name, revision: 0, instances: new Map(), counts: zeroCounts(), held: 0 };
      this.services.set(name, service);
    }
    return service;
  }

  private remember(service: ServiceState, instance: Instance, nowMs: number): void {
    service.instances.set(instance.instanceId, { instance, seenAtMs: nowMs });
    service.counts[instance.status] += 1;
    if (instance.evictionHeld) service.held += 1;
    this.instanceTotal += 1;
  }

  private forget(service: ServiceState, instance: Instance): void {
    service.counts[instance.status] -= 1;
    if (instance.evictionHeld) service.held -= 1;
    this.instanceTotal -= 1;
  }
}

/** Does an instance match a lower-case search text: id, address, status, zone, owner or metadata? */
export function matches(instance: Instance, needle: string): boolean {
  if (instance.instanceId.toLowerCase().includes(needle)) return true;
  if (`${instance.host}:${instance.port}`.toLowerCase().includes(needle)) return true;
  if (instance.status.toLowerCase() === needle || instance.zone.toLowerCase() === needle || instance.owner.toLowerCase() === needle) return true;
  for (const [key, value] of Object.entries(instance.metadata)) {
    if (`${key}=${value}`.toLowerCase().includes(needle)) return true;
  }
  return false;
}

/** Lease left now, counted down from when the figure was read: `held`, `expired` or milliseconds. */
export function leaseLeft(entry: InstanceEntry, nowMs: number): number | 'held' | 'expired' {
  if (entry.instance.evictionHeld) return 'held';
  if (!entry.instance.leaseLive) return 'expired';
  const leftMs = entry.instance.leaseExpiresInMs - (nowMs - entry.seenAtMs);
  return leftMs > 0 ? leftMs : 'expired';
}
