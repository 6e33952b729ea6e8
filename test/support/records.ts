import { formatVersion } from '../../src/clock/hlc.js';
import type { InstanceRecord, StoredInstance } from '../../src/registry/types.js';

/** A record for tests; `wallMs`/`peerId` make its version. */
export function record(
  overrides: Partial<InstanceRecord> & { wallMs?: number; counter?: number; peerId?: string } = {},
): InstanceRecord {
  const { wallMs = 1_000, counter = 0, peerId = 'a', ...rest } = overrides;
  return {
    namespace: 'default',
    service: 'orders',
    instanceId: 'i-1',
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    version: formatVersion({ wallMs, counter, peerId }),
    owner: peerId,
    deleted: null,
    leaseDurationMs: 30_000,
    registeredAtMs: wallMs,
    ...rest,
  };
}

/** A stored instance for tests. */
export function stored(rec: InstanceRecord, local: Partial<StoredInstance> = {}): StoredInstance {
  return { record: rec, leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0, revision: 1, subBucket: 0, ...local };
}
