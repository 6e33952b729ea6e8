import type { RenewalSink } from '../registry/registry.js';

/**
 * Counts renewals over a sliding window (`windowMs`, in 100 ms buckets): self-preservation
 * compares this count with the number expected. Bounded memory whatever the rate; the fine
 * buckets keep the window within 0.2% of its length, so a client renewing every 10 s is seen
 * 6 times in a 60 s window whatever its phase.
 */
export class RenewalWindow implements RenewalSink {
  private readonly counts: Float64Array;
  private readonly slots: Float64Array;
  private readonly bucketMs: number;

  constructor(
    readonly windowMs: number,
    bucketMs = 100,
  ) {
    this.bucketMs = Math.min(bucketMs, windowMs);
    const size = Math.ceil(windowMs / this.bucketMs);
    this.counts = new Float64Array(size);
    this.slots = new Float64Array(size).fill(-1);
  }

  recordRenewal(nowMs: number): void {
    const slot = Math.floor(nowMs / this.bucketMs);
    const index = slot % this.counts.length;
    if (this.slots[index] !== slot) {
      this.slots[index] = slot;
      this.counts[index] = 0;
    }
    this.counts[index] = (this.counts[index] ?? 0) + 1;
  }

  /** Renewals in the window ending now. */
  count(nowMs: number): number {
    const newest = Math.floor(nowMs / this.bucketMs);
    const oldest = newest - this.counts.length + 1;
    let total = 0;
    for (let i = 0; i < this.counts.length; i++) {
      const slot = this.slots[i]!;
      if (slot >= oldest && slot <= newest) total += this.counts[i]!;
    }
    return total;
  }
}
