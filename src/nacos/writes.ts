import { andThen } from '../app/durable-write.js';
import type { RegistryReads } from '../app/reads.js';
import type { Durable, RegistryWrites } from '../app/writes.js';
import { RegistryError } from '../errors.js';
import type { RegisterResult } from '../registry/registry.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { registrationOfNacos, type NacosInputLimits, type NacosInstanceFields } from './instance-input.js';

/** Nacos's beat answer code for a beat the server took. */
export const BEAT_OK = 10_200;
/** Nacos's "resource not found" code: the instance is gone, the client registers again. */
export const BEAT_NOT_FOUND = 20_404;

/** What a beat answers: Nacos's code, and the interval the client should beat at (ms). */
export interface BeatAnswer {
  code: number;
  clientBeatIntervalMs: number;
}

/**
 * The Nacos adapter's writes (HTTP and gRPC alike), on the application layer: register,
 * update, deregister and beat, each answered once durable (src/app/writes.ts).
 */
export class NacosWrites {
  constructor(
    private readonly writes: RegistryWrites,
    private readonly reads: Pick<RegistryReads, 'find'>,
    private readonly limits: () => NacosInputLimits,
  ) {}

  register(fields: NacosInstanceFields): Durable<RegisterResult> {
    return this.writes.register(registrationOfNacos(fields, this.limits()));
  }

  /** Nacos's PUT /instance: the instance's fields again; 404 when it is not registered. */
  update(fields: NacosInstanceFields): Durable<RegisterResult> {
    const input = registrationOfNacos(fields, this.limits());
    if (!this.reads.find(input)) throw notFound(input);
    return this.writes.register(input);
  }

  /** Removes an instance; one that is not registered is already removed (Nacos answers `ok` too). */
  deregister(key: InstanceKey): Durable<StoredInstance> | null {
    if (!this.reads.find(key)) return null;
    return this.writes.cancel(key);
  }

  /**
   * A v1 beat: renews the lease of `key`. When the instance is gone (its lease ran out, or it
   * was cancelled), a beat that carries the instance (`beat` JSON: Nacos 1.x clients send it)
   * registers it again, as Nacos does; a light beat answers code 20404 and the client registers.
   */
  beat(key: InstanceKey, fields: NacosInstanceFields | null): BeatAnswer | Promise<BeatAnswer> {
    const interval = (entry: StoredInstance) => entry.record.data.renewalIntervalMs ?? this.limits().heartbeatIntervalMs;
    if (this.reads.find(key)) {
      try {
        return andThen(this.writes.heartbeat(key), (entry) => ({ code: BEAT_OK, clientBeatIntervalMs: interval(entry) }));
      } catch (error) {
        if (!(error instanceof RegistryError && error.code === 'REG_ERR_INSTANCE_NOT_FOUND')) throw error;
      }
    }
    if (fields === null) return { code: BEAT_NOT_FOUND, clientBeatIntervalMs: this.limits().heartbeatIntervalMs };
    return andThen(this.register(fields), ({ entry }) => ({ code: BEAT_OK, clientBeatIntervalMs: interval(entry) }));
  }

  /** Renews the leases of instances a v2 connection holds (its liveness is their heartbeat); gone ones are skipped. */
  renew(keys: Iterable<InstanceKey>): void {
    for (const key of keys) {
      if (!this.reads.find(key)) continue;
      try {
        const renewed = this.writes.heartbeat(key);
        if (renewed instanceof Promise) renewed.catch(() => {});
      } catch {
        // Gone since (cancelled elsewhere): the connection's next register brings it back.
      }
    }
  }
}

function notFound(key: InstanceKey): RegistryError {
  return new RegistryError('REG_ERR_INSTANCE_NOT_FOUND', `instance ${key.instanceId} of service ${key.service} in namespace ${key.namespace} is not registered: register it first`);
}
