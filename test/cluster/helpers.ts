import { afterEach, onTestFailed } from 'vitest';
import { listService } from '../../src/registry/queries.js';
import { TestCluster, type ClusterOptions } from '../support/cluster.js';

let current: TestCluster | undefined;

/** Stops the cluster of the test that just ran. Call once at the top of a test file. */
export function useClusterCleanup(): void {
  afterEach(async () => {
    await current?.stop();
    current = undefined;
  });
}

/** Builds and starts a cluster; prints its seed if the test fails. */
export async function startCluster(options: ClusterOptions): Promise<TestCluster> {
  current = new TestCluster(options);
  const seed = options.seed ?? 1;
  onTestFailed(() => console.error(`cluster seed: ${seed}`));
  await current.start();
  return current;
}

/** Instance ids a peer serves for a service (any status, live lease). */
export function visibleIds(cluster: TestCluster, peerId: string, service = 'orders'): string[] {
  const node = cluster.node(peerId);
  return listService(node.store, 'default', service, node.registry.leaseView(), true).instances.map((i) => i.instanceId);
}

/**
 * A client heartbeating each instance on one peer every `intervalMs` for `durationMs` of
 * virtual time. A 404 is left for the test to judge from what is visible afterwards.
 */
export async function heartbeatFor(
  cluster: TestCluster,
  peerId: string,
  instanceIds: string[],
  durationMs: number,
  intervalMs = 10_000,
): Promise<void> {
  for (let elapsed = 0; elapsed < durationMs; elapsed += intervalMs) {
    for (const instanceId of instanceIds) {
      try {
        cluster.node(peerId).registry.heartbeat({ namespace: 'default', service: 'orders', instanceId });
      } catch {
        // unknown here: the test checks the outcome
      }
    }
    await cluster.advance(Math.min(intervalMs, durationMs - elapsed));
  }
}
