import type { Clock } from '../../src/clock/clock.js';
import type { MembershipView } from '../../src/lease/lease-scan.js';
import { Reaper, type ExpiryCheck, type ReaperInit } from '../../src/lease/reaper.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import type { RegistryNode } from '../../src/node.js';

/**
 * A reaper of `node`'s registry and eviction safety on `clock` (a stepped clock, for tests that
 * fire its turns one by one), asking `membership`, with the node's lease settings and `init`
 * on top; not started.
 */
export function reaperFor(
  node: RegistryNode,
  clock: Clock,
  membership: MembershipView,
  init: Partial<ReaperInit> = {},
  options: { expiryCheck?: ExpiryCheck; logger?: Logger } = {},
): Reaper {
  const { cluster } = node.config;
  return new Reaper(
    {
      clock,
      rng: node.components.rng,
      registry: node.registry,
      membership,
      safety: node.safety,
      logger: options.logger ?? silentLogger,
      ...(options.expiryCheck ? { expiryCheck: options.expiryCheck } : {}),
    },
    {
      evictionIntervalMs: cluster.evictionIntervalMs,
      tombstoneTtlMs: cluster.tombstoneTtlMs,
      orphanTimeoutMs: cluster.orphanTimeoutMs,
      heartbeatIntervalMs: cluster.heartbeatIntervalMs,
      renewalWindowMs: cluster.renewalWindowMs,
      ...init,
    },
  );
}
