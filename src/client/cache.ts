import type { Clock } from '../clock/clock.js';
import type { ClientLogger } from './logger.js';
import { isAvailable, sortedById } from './transitions.js';
import type { Discovery, Instance } from './types.js';
import type { DeltaMessage, SnapshotMessage } from './wire.js';

/** Which instances of a service an applied event may have changed: some ids, or all (a snapshot). */
export type ChangedIds = readonly string[] | 'all';

/** Told about every applied event, in order. */
export type CacheListener = (service: string, ids: ChangedIds, kind: 'snapshot' | 'delta') => void;

interface ServiceEntry {
  /** Every instance the stream lists (any status), by id. */
  instances: Map<string, Instance>;
  /** The stream now connected delivered this service's snapshot (deltas apply on top of it). */
  inSync: boolean;
  /** Revision of the last event applied from the current connection (revisions are per peer). */
  revision: number;
  /** The peer the list came from. */
  peer: string;
  /** While not in sync: when it last was (epoch ms). */
  lastSyncedAtMs: number;
}

/**
 * The local copy of the watched services, kept by the watch stream. Each new connection (to
 * any peer) starts out of sync and is brought back by that peer's snapshot, which replaces
 * the list (revisions are per peer: the new snapshot is the truth); until then, and while no
 * peer can be reached at all, the last list stays and is served, flagged stale once no stream
 * has been in sync for longer than `staleAfterMs`.
 */
export class DiscoveryCache {
  private readonly entries = new Map<string, ServiceEntry>();
  private readonly listeners = new Set<CacheListener>();
  private connectedPeer: string | null = null;
  /** When the connected stream last delivered anything (event or keep-alive). */
  private lastHeardAtMs = 0;
  private readonly log: ClientLogger;

  constructor(
    private readonly components: { clock: Clock; logger: ClientLogger },
    private readonly init: { staleAfterMs: number },
  ) {
    this.log = components.logger.child({ component: 'cache' });
  }

  onChange(listener: CacheListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A stream to `peer` is open: every service waits for that peer's snapshot. */
  connected(peer: string): void {
    if (this.connectedPeer !== null) this.disconnected();
    this.connectedPeer = peer;
    this.lastHeardAtMs = this.components.clock.nowMs();
  }

  /** The stream delivered bytes: the services in sync are current as of now. */
  heard(): void {
    this.lastHeardAtMs = this.components.clock.nowMs();
  }

  /** The stream is gone: every list is kept as it is, and ages from now. */
  disconnected(): void {
    for (const entry of this.entries.values()) {
      if (entry.inSync) {
        entry.inSync = false;
        entry.lastSyncedAtMs = this.lastHeardAtMs;
      }
    }
    this.connectedPeer = null;
  }

  /** Replaces the service's list with a snapshot of the connected peer. */
  applySnapshot(peer: string, message: SnapshotMessage): void {
    const instances = new Map(message.instances.map((instance) => [instance.instanceId, instance]));
    const entry = this.entries.get(message.service);
    if (entry) {
      entry.instances = instances;
      entry.inSync = true;
      entry.revision = message.revision;
      entry.peer = peer;
    } else {
      this.entries.set(message.service, { instances, inSync: true, revision: message.revision, peer, lastSyncedAtMs: 0 });
    }
    this.emit(message.service, 'all', 'snapshot');
  }

  /**
   * Applies a delta on top of the snapshot of the same connection. A delta with no snapshot
   * before it on this connection, or with a revision not above the last one, is ignored
   * (logged): it would apply to a list of another peer, or twice.
   */
  applyDelta(peer: string, message: DeltaMessage): void {
    const entry = this.entries.get(message.service);
    if (!entry || !entry.inSync || entry.peer !== peer) {
      this.log.warn({ peer, service: message.service }, 'delta before the snapshot of this stream; ignored');
      return;
    }
    if (message.revision <= entry.revision) {
      this.log.warn({ peer, service: message.service, revision: message.revision, last: entry.revision }, 'delta out of order; ignored');
      return;
    }
    entry.revision = message.revision;
    const ids: string[] = [];
    for (const instance of [...message.added, ...message.changed]) {
      entry.instances.set(instance.instanceId, instance);
      ids.push(instance.instanceId);
    }
    for (const instanceId of message.removed) {
      entry.instances.delete(instanceId);
      ids.push(instanceId);
    }
    this.emit(message.service, ids, 'delta');
  }

  /** Whether a list (current or stale) is known for the service. */
  has(service: string): boolean {
    return this.entries.has(service);
  }

  /** Every listed instance of the service (any status), by id; empty when unknown. */
  instancesOf(service: string): ReadonlyMap<string, Instance> {
    return this.entries.get(service)?.instances ?? new Map();
  }

  /** The cached answer for `discover`, or undefined when no list was ever received. */
  read(service: string, options: { allStatuses?: boolean } = {}): Discovery | undefined {
    const entry = this.entries.get(service);
    if (!entry) return undefined;
    const nowMs = this.components.clock.nowMs();
    const inSync = entry.inSync && this.connectedPeer === entry.peer;
    const updatedAtMs = inSync ? this.lastHeardAtMs : entry.lastSyncedAtMs;
    const listed = [...entry.instances.values()];
    return {
      service,
      instances: sortedById(options.allStatuses ? listed : listed.filter(isAvailable)),
      stale: !inSync && nowMs - entry.lastSyncedAtMs > this.init.staleAfterMs,
      updatedAtMs,
      peer: entry.peer,
    };
  }

  private emit(service: string, ids: ChangedIds, kind: 'snapshot' | 'delta'): void {
    for (const listener of this.listeners) listener(service, ids, kind);
  }
}
