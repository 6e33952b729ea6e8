import { AdapterMetrics } from '../metrics/adapter-metrics.js';
import type { AdapterPorts } from './contract.js';

/**
 * The metrics port of the adapter contract (contract.ts, `metrics`): the peer's
 * `AdapterMetrics` (`node.adapterMetrics`), which an adapter declares its operations and held
 * pools in once, when it is built (docs/metrics.md, "How an adapter records"). Ports made
 * without one (a unit test's hand-made ports, or an adapter not yet handed the port) get a
 * detached recorder: the adapter records the same way and nothing is exported.
 */
export function metricsPortOf(ports: Partial<Pick<AdapterPorts, 'metrics'>> | undefined): AdapterMetrics {
  return ports?.metrics ?? new AdapterMetrics({ monotonicMs: () => performance.now(), nowMs: () => Date.now() });
}
