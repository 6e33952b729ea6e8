import { MetricsDeclarationError, outcomeOfStatus, type AdapterMetrics, type OperationRecorder } from './adapter-metrics.js';

/**
 * Which adapter an HTTP route of the main port belongs to, by its pattern's prefix, first match
 * wins: the native API, Eureka, Prometheus SD. Operator, peer and dashboard routes (null) are
 * the peer's own, not a protocol's. One line per protocol served on the main port.
 */
export const HTTP_ADAPTER_PREFIXES: ReadonlyArray<readonly [prefix: string, adapter: string | null]> = [
  ['/v1/peer/', null],
  ['/v1/admin/', null],
  ['/v1/cluster', null],
  ['/v1/dashboard/', null],
  ['/v1/sd/prometheus', 'prometheus'],
  ['/eureka/', 'eureka'],
  ['/v1/', 'native'],
];

/** The adapter a route pattern belongs to, or null (operator routes, probes, the dashboard, docs). */
export function adapterOfRoute(url: string): string | null {
  for (const [prefix, adapter] of HTTP_ADAPTER_PREFIXES) if (url.startsWith(prefix)) return adapter;
  return null;
}

/** The suffix the HTTP histogram gives a route answered as a long poll (metrics-routes.ts). */
export const LONG_POLL_SUFFIX = ' (long poll)';

/**
 * The requests of the protocols served on the main HTTP port, counted into their adapter's
 * metrics from the same place the HTTP latency histogram is fed (so the fast path of discover
 * is counted too): operation `METHOD pattern`, outcome from the status (`outcomeOfStatus`).
 * Operations are declared as routes are added, so a request costs two map lookups on strings
 * fastify already holds and the recorder's array writes.
 */
export class HttpAttribution {
  /** Route pattern (as labelled in the histogram) -> method -> recorder. */
  private readonly byRoute = new Map<string, Map<string, OperationRecorder>>();

  constructor(private readonly adapters: AdapterMetrics) {}

  /** Declares the operation of a route as it is added (HEAD routes are not counted apart). */
  declare(method: string, url: string, options: { longPoll?: boolean } = {}): void {
    const adapter = adapterOfRoute(url);
    if (adapter === null || method === 'HEAD') return;
    const routes = options.longPoll ? [url, `${url}${LONG_POLL_SUFFIX}`] : [url];
    for (const route of routes) {
      const operation = `${method} ${route}`;
      let recorder: OperationRecorder;
      try {
        recorder = this.adapters.adapter(adapter, [operation]).operation(operation);
      } catch (error) {
        // Past the declared bound: the route is served, only not counted apart (never at request time).
        if (error instanceof MetricsDeclarationError) continue;
        throw error;
      }
      let byMethod = this.byRoute.get(route);
      if (!byMethod) this.byRoute.set(route, (byMethod = new Map()));
      byMethod.set(method, recorder);
    }
  }

  /** One answered request, as the HTTP histogram sees it. */
  observe(method: string, route: string, statusCode: number, seconds: number): void {
    this.byRoute.get(route)?.get(method)?.observe(outcomeOfStatus(statusCode), seconds);
  }
}
