import type { ServiceEntries } from './store.js';
import type { StoredInstance } from './types.js';

/**
 * A walk over every stored instance, tombstones included, that can stop after a number of
 * entries and go on in a later turn of the event loop: for whole-store passes too long for one
 * turn (an owner of 250,000 instances among 1,000,000 going down: bench/registry-passes.ts).
 * It holds the store's own Map iterators, so an entry replaced meanwhile is seen in its new
 * form if the walk has not passed its key yet, a key or service added is seen if the walk has
 * not passed its service or namespace yet, and a key removed is skipped. A pass that must see
 * every entry written meanwhile has to cover the ones added behind it some other way.
 */
export class StoreWalk {
  private readonly services: Iterator<ServiceEntries>;
  private instances: Iterator<StoredInstance> | undefined;

  constructor(services: Iterable<ServiceEntries>) {
    this.services = services[Symbol.iterator]();
  }

  /** Visits at most `maxEntries` more entries; true once every entry has been visited. */
  step(maxEntries: number, visit: (entry: StoredInstance) => void): boolean {
    let left = maxEntries;
    for (;;) {
      if (!this.instances) {
        const next = this.services.next();
        if (next.done) return true;
        this.instances = next.value.instances.values();
      }
      // Stepped by hand: leaving a for-of early would call the iterator's `return` where it has
      // one, and the walk keeps its place for the next turn.
      for (let next = this.instances.next(); !next.done; next = this.instances.next()) {
        visit(next.value);
        if (--left === 0) return false;
      }
      this.instances = undefined;
    }
  }
}
