import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import type { Application } from '../app/application.js';
import type { Logger } from '../log/logger.js';
import { sampledLogger } from '../log/sampled.js';
import { AccessPort } from './access.js';
import type { AdapterPorts } from './contract.js';
import { LimitsPort } from './limits.js';

/** What the ports are made of: the peer's application layer, settings, clock and logger. */
export interface PortsSource {
  application: Application;
  config: Pick<RegistryConfig, 'limits' | 'security'>;
  clock: Clock;
  logger: Logger;
}

/**
 * The adapter ports of one peer, made once (by the node: `node.ports`) and shared by every
 * adapter, so that the rate buckets and the held-slot pools are the peer's, not each
 * protocol's.
 */
export function createAdapterPorts(source: PortsSource): AdapterPorts {
  const limits = new LimitsPort(source.clock, source.config.limits);
  return {
    writes: source.application.writes,
    reads: source.application.reads,
    access: new AccessPort(source.config.security.tokens, limits),
    limits,
    logger: sampledLogger(source.logger, source.clock),
  };
}
