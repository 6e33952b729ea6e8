import { invalid } from '../errors.js';
import type { ProtocolExtension } from '../registry/extensions.js';
import type { InstanceData, InstanceStatus } from '../registry/types.js';

/**
 * What a Nacos client says of an instance beyond our core fields: its `healthy` and `enabled`
 * flags as sent. Our status carries both (`enabled: false` is OUT_OF_SERVICE, `healthy: false`
 * DOWN), but an instance both disabled and unhealthy would come back healthy without this.
 * Kept as the record's `nacos` protocol extension (registry/extensions.ts): typed, replicated
 * with the instance, never JSON in metadata.
 */
export interface NacosAttributes {
  healthy: boolean;
  enabled: boolean;
}

/** The name of the Nacos adapter's protocol extension on a record. */
export const NACOS_EXTENSION = 'nacos';

/** Checks a value claimed to be Nacos attributes (from a client, a peer or the disk). */
export function parseNacosAttributes(value: unknown, field = NACOS_EXTENSION): NacosAttributes {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(field, 'must be an object');
  const input = value as Record<string, unknown>;
  for (const key of Object.keys(input)) if (key !== 'healthy' && key !== 'enabled') throw invalid(`${field}.${key}`, 'is not a known field');
  if (typeof input.healthy !== 'boolean') throw invalid(`${field}.healthy`, 'must be a boolean');
  if (typeof input.enabled !== 'boolean') throw invalid(`${field}.enabled`, 'must be a boolean');
  return { healthy: input.healthy, enabled: input.enabled };
}

/** Our status of a Nacos instance's flags. */
export function statusOfFlags(flags: NacosAttributes): InstanceStatus {
  if (!flags.enabled) return 'OUT_OF_SERVICE';
  return flags.healthy ? 'UP' : 'DOWN';
}

/**
 * The Nacos flags of any instance: from our status (whatever protocol set it last), the
 * extension only telling the healthy flag of a disabled instance, which our status cannot.
 */
export function flagsOf(data: InstanceData): NacosAttributes {
  if (data.status !== 'OUT_OF_SERVICE') return { healthy: data.status === 'UP', enabled: true };
  const extension = data.extensions?.[NACOS_EXTENSION];
  return { healthy: extension?.healthy !== false, enabled: false };
}

/** Data with these Nacos flags as its status and `nacos` extension. */
export function withNacos<T extends InstanceData>(data: T, flags: NacosAttributes): T {
  return {
    ...data,
    status: statusOfFlags(flags),
    extensions: { ...data.extensions, [NACOS_EXTENSION]: { healthy: flags.healthy, enabled: flags.enabled } as ProtocolExtension },
  };
}
