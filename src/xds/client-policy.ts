import type { XdsLbPolicy, XdsLbPolicySetting } from './declaration.js';

/**
 * Which balancing policy a client is sent. Each ADS request names its client in
 * `node.user_agent_name` and `node.user_agent_version`. gRPC C-core (the core of the Python,
 * C++, Ruby and PHP clients) of 1.50 and 1.51 parses and ACKs a `RING_HASH` Cluster, then dies
 * with SIGSEGV on its first call (grpc/grpc#31766, fixed in 1.52): Debian 12's python3-grpcio
 * and libgrpc++ are 1.51. Such a client is sent `ROUND_ROBIN`, which it runs: locality weights
 * (the sum of each zone's endpoint weights) still split its calls between zones, endpoint
 * weights within a zone it cannot honour (docs/xds.md).
 *
 * C-core names itself `gRPC C-core <platform>[ <language>]` and its version
 * `C-core <core version>[ <language> <gRPC version>]`: core 28 is gRPC 1.50, 29 is 1.51, 30 is
 * 1.52. Every C-core before 30 gets round_robin (ring_hash there is older and less tried; the
 * choice costs only the weights within a zone).
 */

/** The first C-core version whose ring_hash does not crash (gRPC 1.52). */
export const CCORE_RING_HASH_SAFE_MAJOR = 30;

/** What a request's node says of its client (snake_case, as the ADS service decodes it). */
export interface ClientNode {
  user_agent_name?: string | null;
  user_agent_version?: string | null;
}

/** True when the node is a gRPC C-core client that crashes on (or predates a safe) ring_hash. */
export function cannotRunRingHash(node: ClientNode | null | undefined): boolean {
  const name = node?.user_agent_name ?? '';
  if (!name.startsWith('gRPC C-core')) return false;
  const core = /\bC-core (\d+)\./.exec(node?.user_agent_version ?? '');
  // A C-core that does not say its version is taken as an old one: round_robin runs everywhere.
  return core === null || Number(core[1]) < CCORE_RING_HASH_SAFE_MAJOR;
}

/** The policy a client is sent: the forced one, or under `auto` ring_hash unless the client cannot run it. Pure. */
export function policyFor(setting: XdsLbPolicySetting, node: ClientNode | null | undefined): XdsLbPolicy {
  if (setting !== 'auto') return setting;
  return cannotRunRingHash(node) ? 'round_robin' : 'ring_hash';
}
