import type { Metric, Registry } from 'prom-client';
import { adapterMetricsLimits, outcomes, PUSH_DELAY_BUCKETS_S, REQUEST_BUCKETS_S, type AdapterMetrics } from './adapter-metrics.js';
import { pushHistogramValues, type ExportedValue } from './histogram-values.js';

type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * A series whose values are built at scrape time by `values()`, exported through prom-client's
 * registry like its own metrics (the registry reads `get()`).
 */
export function scrapedSeries(registry: Registry, name: string, help: string, type: MetricType, values: () => ExportedValue[]): void {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => Promise.resolve({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => undefined,
  };
  registry.registerMetric(metric as unknown as Metric);
}

const one = (labels: Record<string, string>, value: number): ExportedValue => ({ metricName: '', labels, value });

/** Sets the metric name of values made with `one` (prom-client prints the family's name when it is absent). */
function named(name: string, values: ExportedValue[]): ExportedValue[] {
  for (const value of values) value.metricName = name;
  return values;
}

/**
 * The adapters' series (docs/metrics.md, "Protocols"), read from `adapters` at scrape time.
 * Requests are listed per operation and outcome once that outcome happened; held pools,
 * refusals, pushes and the xDS counts are listed at zero from their declaration on.
 */
/** The peer's rate limiter as the metrics read it: its heaviest clients now (src/security/rate-limit.ts). */
export interface RateShares {
  heaviest(count: number): Array<{ client: string; used: number }>;
}

export function registerAdapterSeries(registry: Registry, adapters: AdapterMetrics, rates?: RateShares): void {
  const requests = 'registry_adapter_requests_total';
  scrapedSeries(registry, requests, 'Requests each protocol adapter answered, by operation and outcome (ok, bad_input, unauthenticated, forbidden, limited, error).', 'counter', () => {
    const values: ExportedValue[] = [];
    for (const adapter of adapters.all()) {
      for (const recorder of adapter.operations.values()) {
        for (const outcome of outcomes) {
          const count = recorder.count(outcome);
          if (count > 0) values.push(one({ adapter: adapter.adapter, operation: recorder.operation, outcome }, count));
        }
      }
    }
    return named(requests, values);
  });

  const duration = 'registry_adapter_request_duration_seconds';
  scrapedSeries(registry, duration, 'Time each protocol adapter took to answer a request, by operation and outcome.', 'histogram', () => {
    const values: ExportedValue[] = [];
    const width = REQUEST_BUCKETS_S.length + 1;
    for (const adapter of adapters.all()) {
      for (const recorder of adapter.operations.values()) {
        outcomes.forEach((outcome, index) => {
          const count = recorder.counts[index]!;
          if (count === 0) return;
          const labels = { adapter: adapter.adapter, operation: recorder.operation, outcome };
          pushHistogramValues(values, duration, REQUEST_BUCKETS_S, labels, { counts: recorder.buckets, offset: index * width, sum: recorder.sums[index]!, count });
        });
      }
    }
    return values;
  });

  const held = 'registry_adapter_held';
  scrapedSeries(registry, held, 'Slots each adapter holds now (streams, long polls, blocking queries, connections, subscribers), by pool.', 'gauge', () => {
    const values: ExportedValue[] = [];
    for (const adapter of adapters.all()) for (const pool of adapter.pools.values()) values.push(one({ adapter: adapter.adapter, pool: pool.pool }, pool.source.held));
    return named(held, values);
  });

  const refused = 'registry_adapter_held_refused_total';
  scrapedSeries(registry, refused, "Slots refused because the peer's cap (peer) or the principal's share (principal) was reached, by adapter and pool.", 'counter', () => {
    const values: ExportedValue[] = [];
    for (const adapter of adapters.all()) {
      for (const pool of adapter.pools.values()) {
        values.push(
          one({ adapter: adapter.adapter, pool: pool.pool, cap: 'peer' }, pool.refusedAtPeerCap),
          one({ adapter: adapter.adapter, pool: pool.pool, cap: 'principal' }, pool.refusedAtPrincipalShare),
        );
      }
    }
    return named(refused, values);
  });

  const byPrincipal = 'registry_adapter_held_by_principal';
  scrapedSeries(
    registry,
    byPrincipal,
    `Slots held by each of the ${adapterMetricsLimits.heaviestPrincipals} heaviest principals (token:NAME, or address:IP without a token) of each pool.`,
    'gauge',
    () => {
      const values: ExportedValue[] = [];
      for (const adapter of adapters.all()) {
        for (const pool of adapter.pools.values()) {
          for (const { owner, held: count } of pool.source.heaviest(adapterMetricsLimits.heaviestPrincipals)) {
            values.push(one({ adapter: adapter.adapter, pool: pool.pool, principal: owner }, count));
          }
        }
      }
      return named(byPrincipal, values);
    },
  );

  if (rates) {
    const rateUsed = 'registry_rate_limit_used_by_principal';
    scrapedSeries(
      registry,
      rateUsed,
      `Share of its rate-limit burst each of the ${adapterMetricsLimits.heaviestPrincipals} heaviest principals (token:NAME, or address:IP without a token) has spent now (0 full bucket, 1 empty: refused), every protocol together.`,
      'gauge',
      () => named(rateUsed, rates.heaviest(adapterMetricsLimits.heaviestPrincipals).map(({ client, used }) => one({ principal: client }, used))),
    );
  }

  const pushes = 'registry_adapter_pushes_total';
  scrapedSeries(registry, pushes, 'Pushes each adapter wrote to its subscribers (one per subscriber and change).', 'counter', () =>
    named(pushes, [...adapters.all()].map((adapter) => one({ adapter: adapter.adapter }, adapter.pushes.sent))),
  );

  const pushDelay = 'registry_adapter_push_delay_seconds';
  scrapedSeries(registry, pushDelay, 'Time from a change of a service to its push to a subscriber, by adapter.', 'histogram', () => {
    const values: ExportedValue[] = [];
    for (const adapter of adapters.all()) {
      const { pushes: push } = adapter;
      if (push.sent === 0) continue;
      pushHistogramValues(values, pushDelay, PUSH_DELAY_BUCKETS_S, { adapter: adapter.adapter }, { counts: push.delayBuckets, offset: 0, sum: push.delaySum, count: push.sent });
    }
    return values;
  });

  const dnsQueries = 'registry_dns_queries_total';
  scrapedSeries(registry, dnsQueries, 'DNS queries answered, by transport (udp, tcp), query type and response code.', 'counter', () =>
    named(dnsQueries, [...adapters.dns.entries()].map(({ count, ...labels }) => one(labels, count))),
  );
  const truncated = 'registry_dns_udp_truncated_total';
  scrapedSeries(registry, truncated, 'DNS answers over UDP truncated (TC set: the resolver retries over TCP).', 'counter', () => named(truncated, [one({}, adapters.dns.truncated)]));

  const acks = 'registry_xds_acks_total';
  scrapedSeries(registry, acks, 'xDS responses the clients acknowledged, by resource type.', 'counter', () =>
    named(acks, [...adapters.xds.entries()].map(({ type, acks: count }) => one({ type }, count))),
  );
  const nacks = 'registry_xds_nacks_total';
  scrapedSeries(registry, nacks, 'xDS responses the clients refused (NACK), by resource type.', 'counter', () =>
    named(nacks, [...adapters.xds.entries()].map(({ type, nacks: count }) => one({ type }, count))),
  );
}
