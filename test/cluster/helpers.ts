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

/**
 * Clients of instances, each heartbeating one peer every `intervalMs` of virtual time, and
 * registering again on a 404, as real clients do. A client can die, be cut off from its peer,
 * or fail over to the next live peer when its own is gone.
 */
export class ClientFleet {
  private readonly clients = new Map<
    string,
    { peer: string; service: string; alive: boolean; cutOff: boolean; failover: boolean; nextBeatAtMs: number; lastBeatAtMs: number }
  >();

  constructor(
    private readonly cluster: TestCluster,
    private readonly intervalMs = 10_000,
  ) {}

  add(instanceId: string, peer: string, service = 'orders', options: { failover?: boolean; leaseDurationMs?: number } = {}): void {
    // Real clients are spread over the interval: each gets its own (seeded) phase.
    const phaseMs = Math.floor(this.cluster.rng.next() * this.intervalMs);
    this.clients.set(instanceId, {
      peer,
      service,
      alive: true,
      cutOff: false,
      failover: options.failover ?? false,
      nextBeatAtMs: this.cluster.clock.nowMs() + phaseMs,
      lastBeatAtMs: this.cluster.clock.nowMs(),
    });
    this.cluster.node(peer).registry.register(instanceOf(instanceId, service, options.leaseDurationMs));
  }

  kill(instanceId: string): void {
    this.clients.get(instanceId)!.alive = false;
  }

  /** When the client's last heartbeat (or register) reached a peer. */
  lastBeatAtMs(instanceId: string): number {
    return this.clients.get(instanceId)!.lastBeatAtMs;
  }

  /** Clients of `peer` can no longer reach it (they keep trying it, without failing over). */
  cutOff(peer: string, cut: boolean): void {
    for (const client of this.clients.values()) if (client.peer === peer) client.cutOff = cut;
  }

  ids(filter: (id: string) => boolean = () => true): string[] {
    return [...this.clients.keys()].filter(filter);
  }

  /** Lets virtual time run for `durationMs` in 1 s steps, each client beating on its own phase; `check` runs every step. */
  async run(durationMs: number, check?: () => void): Promise<void> {
    for (let elapsed = 0; elapsed < durationMs; elapsed += 1_000) {
      this.beat();
      check?.();
      await this.cluster.advance(Math.min(1_000, durationMs - elapsed));
    }
    check?.();
  }

  private beat(): void {
    const nowMs = this.cluster.clock.nowMs();
    for (const [instanceId, client] of this.clients) {
      if (client.nextBeatAtMs > nowMs) continue;
      client.nextBeatAtMs += this.intervalMs;
      if (!client.alive || client.cutOff) continue;
      if (!this.cluster.nodes.has(client.peer)) {
        if (!client.failover) continue;
        client.peer = this.cluster.ids.find((id) => this.cluster.nodes.has(id))!;
      }
      const registry = this.cluster.node(client.peer).registry;
      const key = { namespace: 'default', service: client.service, instanceId };
      try {
        registry.heartbeat(key);
      } catch {
        registry.register(instanceOf(instanceId, client.service));
      }
      client.lastBeatAtMs = nowMs;
    }
  }
}

function instanceOf(instanceId: string, service: string, leaseDurationMs = 30_000) {
  return {
    namespace: 'default',
    service,
    instanceId,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
    leaseDurationMs,
  };
}
