import { instanceKeyString, type InstanceKey } from '../registry/types.js';

interface Pending {
  key: InstanceKey;
  /** When the write was queued, for the replication lag figure. */
  queuedAtMs: number;
}

/**
 * The pending writes for one peer, as a bounded set of keys in arrival order. A key holds
 * only its place in line: what is sent is the store's current record for it, so a newer
 * write for a key replaces a pending older one for free. When full, the oldest key is
 * dropped (and counted): the freshest changes keep flowing and anti-entropy repairs the rest.
 */
export class Outbox {
  private readonly pending = new Map<string, Pending>();
  dropped = 0;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.pending.size;
  }

  /** Adds a key at the back of the line (a newer write of a queued key moves it there). */
  add(key: InstanceKey, queuedAtMs: number): void {
    const keyString = instanceKeyString(key);
    this.pending.delete(keyString);
    this.pending.set(keyString, { key, queuedAtMs });
    while (this.pending.size > this.maxKeys) {
      this.pending.delete(this.pending.keys().next().value as string);
      this.dropped += 1;
    }
  }

  /** Takes up to `count` keys from the front of the line. */
  take(count: number): Pending[] {
    const out: Pending[] = [];
    for (const [keyString, item] of this.pending) {
      if (out.length >= count) break;
      out.push(item);
      this.pending.delete(keyString);
    }
    return out;
  }

  /** Puts back the keys of a batch that failed, unless a newer write already queued them again. */
  restore(items: Pending[]): void {
    for (const item of items) {
      if (!this.pending.has(instanceKeyString(item.key))) this.add(item.key, item.queuedAtMs);
    }
  }

  /** How long the oldest pending write has waited. */
  oldestAgeMs(nowMs: number): number {
    const oldest = this.pending.values().next().value as Pending | undefined;
    return oldest ? nowMs - oldest.queuedAtMs : 0;
  }
}
