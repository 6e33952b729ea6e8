/** Percentiles of the most recent samples. */
export interface DelaySummary {
  /** Samples seen in all. */
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * Keeps the last `capacity` samples in a ring and answers percentiles over them (sorting a
 * copy on demand: reads are rare, writes are on the hot path and cost one array store).
 */
export class DelaySampler {
  private readonly samples: Float64Array;
  private next = 0;
  private total = 0;

  constructor(private readonly capacity = 10_000) {
    this.samples = new Float64Array(capacity);
  }

  add(valueMs: number): void {
    this.samples[this.next] = valueMs;
    this.next = (this.next + 1) % this.capacity;
    this.total += 1;
  }

  summary(): DelaySummary {
    const held = Math.min(this.total, this.capacity);
    if (held === 0) return { count: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 };
    const sorted = this.samples.slice(0, held).sort();
    const at = (quantile: number) => sorted[Math.min(held - 1, Math.ceil(quantile * held) - 1)] ?? 0;
    return { count: this.total, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted[held - 1] ?? 0 };
  }
}
