import type { Durability } from '../persistence/durability.js';
import type { Registry, RegisterResult } from '../registry/registry.js';
import type { InstanceData, InstanceKey, StoredInstance } from '../registry/types.js';
import type { RegistrationInput } from '../registry/validate.js';
import { durableWrite, type Acknowledged, type Durable } from './durable-write.js';

/** What a write step may do: the registry's writes, and the read that decides them. */
export type RegistryWriter = Pick<Registry, 'register' | 'heartbeat' | 'update' | 'cancel' | 'find'>;

/**
 * How a step is logged and refused: a `write` is refused while the data dir refuses writes; a
 * `renewal` (a heartbeat, and what a protocol decides on it) is not, as it only renews a lease
 * unless it takes an instance over, and that write is then logged like any other.
 */
export type WriteKind = 'write' | 'renewal';

/**
 * Every write a protocol makes to the registry (register, heartbeat, update, cancel), with the
 * durability barrier applied once, here: each returns a `Durable` result, which only this class
 * produces and which a route reads with `whenDurable`, so that no route can acknowledge a write
 * before it is durable. A heartbeat that only renewed a lease comes back at once, no promise.
 */
export class RegistryWrites {
  constructor(private readonly components: { registry: RegistryWriter; durability: Durability }) {}

  register(input: RegistrationInput): Durable<RegisterResult> {
    return this.step((registry) => registry.register(input));
  }

  /** The hot path: one closure, and no promise when the heartbeat only renewed a lease. */
  heartbeat(key: InstanceKey): Durable<StoredInstance> {
    const { registry, durability } = this.components;
    return durableWrite(durability, () => registry.heartbeat(key), false) as Durable<StoredInstance>;
  }

  update(key: InstanceKey, patch: Partial<InstanceData>): Durable<StoredInstance> {
    return this.step((registry) => registry.update(key, patch));
  }

  cancel(key: InstanceKey): Durable<StoredInstance> {
    return this.step((registry) => registry.cancel(key));
  }

  /**
   * A protocol's own write: read, decide and write in one synchronous step (nothing can change
   * in between; never await inside it), answered once durable like the others.
   */
  step<T>(write: (registry: RegistryWriter) => T, kind: WriteKind = 'write'): Durable<T> {
    const { registry, durability } = this.components;
    return durableWrite(durability, () => write(registry), kind === 'write') as Durable<T>;
  }
}

export type { Acknowledged, Durable };
