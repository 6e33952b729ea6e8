import { wallMsOf } from '../clock/hlc.js';
import { groupOf, type InstanceData, type InstanceKey, type StoredInstance } from './types.js';
import { leaseRemainingMs, leaseState, type LeaseView } from './visibility.js';

/** An instance as the native API answers it: its key, its data flattened, and its lease. */
export interface InstanceView extends InstanceKey, InstanceData {
  /** Always present in the view (`DEFAULT_GROUP` when the instance names none). */
  group: string;
  /** The region of the instance's zone, from the peers' configuration; null when no peer is in that zone. */
  region: string | null;
  owner: string;
  version: string;
  leaseDurationMs: number;
  leaseExpiresInMs: number;
  /** False when the lease ran out here (the instance is about to be evicted, or held) or it is hidden. */
  leaseLive: boolean;
  /** The lease ran out but an eviction guard keeps the instance served (see docs/eviction-safety.md). */
  evictionHeld: boolean;
  registeredAtMs: number;
  lastUpdatedAtMs: number;
}

/** The region of a zone as `regionOfZone` (the peers' configuration) says; null for no zone, or a zone no peer is in. */
export function zoneRegion(zone: string, regionOfZone: ((zone: string) => string | undefined) | undefined): string | null {
  return (zone === '' ? undefined : regionOfZone?.(zone)) ?? null;
}

/** The region of an instance's zone as the peers' configuration says now; null when none is known. */
export function regionOf(entry: StoredInstance, view: LeaseView): string | null {
  return zoneRegion(entry.record.data.zone, view.regionOfZone);
}

/** Builds the public view of a stored instance. */
export function toInstanceView(entry: StoredInstance, view: LeaseView): InstanceView {
  const { record } = entry;
  const state = leaseState(entry, view);
  return {
    namespace: record.namespace,
    service: record.service,
    instanceId: record.instanceId,
    host: record.data.host,
    port: record.data.port,
    securePort: record.data.securePort,
    status: record.data.status,
    weight: record.data.weight,
    zone: record.data.zone,
    metadata: record.data.metadata,
    group: groupOf(record.data),
    region: regionOf(entry, view),
    owner: record.owner,
    version: record.version,
    leaseDurationMs: record.leaseDurationMs,
    leaseExpiresInMs: leaseRemainingMs(entry, view),
    leaseLive: state === 'live',
    evictionHeld: state === 'held',
    registeredAtMs: record.registeredAtMs,
    lastUpdatedAtMs: wallMsOf(record.version),
  };
}

/** What a register or a heartbeat answers: the instance, and how often its client should heartbeat. */
export function toRenewedView(entry: StoredInstance, view: LeaseView, heartbeatIntervalMs: number): InstanceView & { heartbeatIntervalMs: number } {
  // Set on the built object rather than spread into a copy: this is every heartbeat's answer.
  const answer = toInstanceView(entry, view) as InstanceView & { heartbeatIntervalMs: number };
  answer.heartbeatIntervalMs = heartbeatIntervalMs;
  return answer;
}
