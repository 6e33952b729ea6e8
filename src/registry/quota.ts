import { RegistryError } from '../errors.js';
import type { InstanceStore } from './store.js';
import type { InstanceKey } from './types.js';

/** `limits.instancesPerServiceMax` and `limits.instancesPerNamespaceMax`. */
export interface InstanceQuota {
  instancesPerServiceMax: number;
  instancesPerNamespaceMax: number;
}

/**
 * Refuses (REG_ERR_QUOTA_EXCEEDED) a new instance of `key` that the service or the namespace
 * has no room for; tombstones count as nothing. The registry calls it for a register of an
 * instance it does not hold, before anything changes.
 */
export function checkQuota(store: Pick<InstanceStore, 'getService' | 'liveCountOfNamespace'>, quota: InstanceQuota, key: InstanceKey): void {
  const inService = store.getService(key.namespace, key.service)?.liveCount ?? 0;
  if (inService >= quota.instancesPerServiceMax) {
    throw new RegistryError(
      'REG_ERR_QUOTA_EXCEEDED',
      `service ${key.service} in namespace ${key.namespace} already holds ${inService} instances, the most limits.instancesPerServiceMax allows: raise it, or cancel instances, to register more`,
    );
  }
  const inNamespace = store.liveCountOfNamespace(key.namespace);
  if (inNamespace >= quota.instancesPerNamespaceMax) {
    throw new RegistryError(
      'REG_ERR_QUOTA_EXCEEDED',
      `namespace ${key.namespace} already holds ${inNamespace} instances, the most limits.instancesPerNamespaceMax allows: raise it, or cancel instances, to register more`,
    );
  }
}
