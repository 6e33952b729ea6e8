import type { Logger } from '../log/logger.js';
import type { RegistryReads } from '../app/reads.js';
import type { RegistryConfig } from '../config/load.js';
import type { NodeComponents } from '../node.js';
import { andThen } from '../app/durable-write.js';
import type { RegistryWrites } from '../app/writes.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import type { RegistrationInput } from '../registry/validate.js';
import { planCheckUpdate, type CheckChange } from './check-update.js';
import { ConsulError } from './errors.js';
import { checksOf } from './fields.js';

/**
 * The Consul API's writes: the same registry operations and durability barrier as `/v1`
 * (src/native/routes.ts): register, cancel, heartbeat and update through the application layer
 * (src/app/writes.ts), so no answer acknowledges a write the data dir does not hold. It also
 * remembers, per TTL check written or renewed here, when that was: the TTL sweep marks a check
 * critical when its TTL passes without an update.
 */
interface TrackedCheck {
  key: InstanceKey;
  checkId: string;
  ttlMs: number;
  lastUpdateMs: number;
}

function trackKey(key: InstanceKey, checkId: string): string {
  return `${key.namespace}/${key.service}/${key.instanceId}\n${checkId}`;
}

export class ConsulWrites {
  private readonly tracked = new Map<string, TrackedCheck>();
  private readonly log: Logger;

  constructor(
    private readonly node: { readonly config: Pick<RegistryConfig, 'cluster' | 'self'>; readonly components: Pick<NodeComponents, 'clock'> },
    private readonly writes: RegistryWrites,
    private readonly reads: Pick<RegistryReads, 'find'>,
    /** The adapter contract's logger (redacting, sampled: a sweep that fails for many checks writes a few lines a second). */
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'consul' });
  }

  private get limits() {
    return this.node.config.cluster;
  }

  /** Registers (or registers again) an instance with its TTL checks. */
  register(input: RegistrationInput, resetTimers = true): StoredInstance | Promise<StoredInstance> {
    return andThen(
      this.writes.register(input),
      ({ entry }) => {
        this.track(entry, resetTimers);
        return entry;
      },
    );
  }

  /** Cancels an instance (a replicated tombstone), and forgets its checks. */
  deregister(key: InstanceKey): StoredInstance | Promise<StoredInstance> {
    const entry = this.reads.find(key);
    for (const check of entry ? checksOf(entry.record.data) : []) this.tracked.delete(trackKey(key, check.id));
    return this.writes.cancel(key);
  }

  /** Applies a check update (check-update.ts); 404 when the instance has no such check. */
  updateCheck(key: InstanceKey, checkId: string, change: CheckChange): StoredInstance | Promise<StoredInstance> {
    const entry = this.reads.find(key);
    const plan = entry ? planCheckUpdate(entry.record.data, key.instanceId, checkId, change, this.limits) : null;
    if (!entry || !plan) throw unknownCheck(checkId);
    const nowMs = this.node.components.clock.nowMs();
    const tracked = this.tracked.get(trackKey(key, checkId));
    if (tracked) tracked.lastUpdateMs = nowMs;
    else this.track(entry);
    const { write, lease } = plan;
    if (write === null) {
      return plan.renew ? this.writes.heartbeat(key) : entry;
    }
    if (lease !== null) {
      const { record } = entry;
      return this.register({
        namespace: record.namespace,
        service: record.service,
        instanceId: record.instanceId,
        data: { ...record.data, extensions: write.extensions, status: write.status },
        leaseDurationMs: lease,
      }, false);
    }
    return this.writes.step((registry) => {
      const updated = registry.update(key, { extensions: write.extensions, status: write.status });
      return plan.renew ? registry.heartbeat(key) : updated;
    });
  }

  /**
   * Marks critical every TTL check of an instance this peer owns whose TTL passed without an
   * update here (Consul's agent does the same with a timer per check). Called every
   * `consul.ttlSweepIntervalMs`; a failed write is logged and tried again at the next sweep.
   */
  sweep(): void {
    const nowMs = this.node.components.clock.nowMs();
    for (const [id, tracked] of [...this.tracked]) {
      const entry = this.reads.find(tracked.key);
      const check = entry ? checksOf(entry.record.data).find((item) => item.id === tracked.checkId) : undefined;
      if (!entry || !check) {
        this.tracked.delete(id);
        continue;
      }
      // The owner sweeps; a peer that only relays heartbeats keeps what it knows, for a takeover.
      if (entry.record.owner !== this.node.config.self.id || check.status === 'critical') continue;
      const silentMs = nowMs - tracked.lastUpdateMs;
      if (silentMs <= check.ttlMs) continue;
      const output = `TTL expired (no update for ${Math.round(silentMs / 1_000)} s, TTL ${check.ttlMs / 1_000} s)`;
      try {
        const done = this.updateCheck(tracked.key, tracked.checkId, { status: 'critical', output });
        if (done instanceof Promise) done.catch((error: unknown) => this.log.warn({ err: error, check: tracked.checkId }, 'TTL check could not be marked critical'));
      } catch (error) {
        this.log.warn({ err: error, check: tracked.checkId }, 'TTL check could not be marked critical');
      }
    }
  }

  /** Remembers the checks of an instance written or renewed here; a check first seen counts as updated now. */
  private track(entry: StoredInstance, resetTimers = false): void {
    const { record } = entry;
    const nowMs = this.node.components.clock.nowMs();
    for (const check of checksOf(record.data)) {
      const key = { namespace: record.namespace, service: record.service, instanceId: record.instanceId };
      const id = trackKey(key, check.id);
      const known = this.tracked.get(id);
      if (known) {
        known.ttlMs = check.ttlMs;
        if (resetTimers) known.lastUpdateMs = nowMs;
      } else {
        this.tracked.set(id, { key, checkId: check.id, ttlMs: check.ttlMs, lastUpdateMs: nowMs });
      }
    }
  }
}

/** Consul's answer for a check it does not know. */
export function unknownCheck(checkId: string): ConsulError {
  return new ConsulError(404, `Unknown check ID "${checkId.slice(0, 256)}". Ensure that the check ID is passed, not the check name.`);
}
