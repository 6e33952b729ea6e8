/** One exported value, in the shape prom-client's registry prints (its Histogram answers these). */
export interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string | number>;
  value: number;
}

/** What a histogram series holds: observations per bucket (not cumulative, the last one past every bound), their sum and count. */
export interface HistogramFigures {
  counts: Float64Array;
  /** Where this series' buckets start in `counts` (several series may share one array). */
  offset: number;
  sum: number;
  count: number;
}

/**
 * Appends the values of one histogram series as prom-client's Histogram answers them from its
 * `get()`: cumulative buckets with `le`, `+Inf`, then `_sum` and `_count`, each carrying the
 * series' labels. Used at scrape time only, never on a request path.
 */
export function pushHistogramValues(
  values: ExportedValue[],
  name: string,
  bounds: readonly number[],
  labels: Record<string, string | number>,
  figures: HistogramFigures,
): void {
  const bucketName = `${name}_bucket`;
  let cumulative = 0;
  for (let i = 0; i < bounds.length; i++) {
    cumulative += figures.counts[figures.offset + i]!;
    values.push({ labels: { le: bounds[i]! }, value: cumulative, metricName: bucketName, sharedLabels: labels });
  }
  values.push(
    { labels: { le: '+Inf' }, value: figures.count, metricName: bucketName, sharedLabels: labels },
    { labels: {}, value: figures.sum, metricName: `${name}_sum`, sharedLabels: labels },
    { labels: {}, value: figures.count, metricName: `${name}_count`, sharedLabels: labels },
  );
}

/** The bucket an observation falls in: the first bound it does not exceed, or `bounds.length` (+Inf). */
export function bucketOf(bounds: readonly number[], value: number): number {
  let bucket = 0;
  while (bucket < bounds.length && value > bounds[bucket]!) bucket += 1;
  return bucket;
}
