import type { InstanceRecord } from './types.js';

/**
 * How often the client of an instance is expected to heartbeat: what its client said it does
 * (`renewalIntervalMs`, set by the adapter that registered it), otherwise the configured interval, shortened to a
 * third of the instance's lease when that lease is short (so that two heartbeats may be lost
 * before it runs out). The register answer tells /v1 clients this interval, and
 * self-preservation counts on it.
 */
export function renewalIntervalMs(record: InstanceRecord, heartbeatIntervalMs: number): number {
  const declaredMs = record.data.renewalIntervalMs;
  if (declaredMs !== undefined && declaredMs > 0) return declaredMs;
  return Math.max(1, Math.min(heartbeatIntervalMs, Math.floor(record.leaseDurationMs / 3)));
}
