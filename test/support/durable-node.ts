import type { FastifyInstance } from 'fastify';
import { seededRng } from '../../src/clock/rng.js';
import { buildServer } from '../../src/http/server.js';
import { RegistryNode } from '../../src/node.js';
import type { Disk } from '../../src/persistence/disk.js';
import { FakeClock } from './fake-clock.js';
import { SimNetwork } from './sim-network.js';
import { testConfig } from './node.js';
import { recordingLogger, type LogLine } from './recording-logger.js';
import { SimDisk } from './sim-disk.js';

export const DATA_DIR = '/data';

export interface DurablePeer {
  node: RegistryNode;
  app: FastifyInstance;
  logs: LogLine[];
  /** A register over HTTP (`app.inject`). */
  register(instanceId: string, extra?: Record<string, unknown>): Promise<{ status: number; body: Record<string, any> }>;
  heartbeat(instanceId: string): Promise<number>;
}

let processCounter = 0;

/** A fake clock and an empty simulated disk whose file times follow it. */
export function simulatedDisk(): { clock: FakeClock; disk: SimDisk } {
  const clock = new FakeClock();
  return { clock, disk: new SimDisk(() => clock.nowMs()) };
}

/**
 * One peer with a data dir on `disk` and a fake clock, its HTTP app ready. Each call plays a
 * new process (its own lock identity), so a test can "crash" one and start the next.
 */
export async function startDurablePeer(
  disk: Disk,
  clock: FakeClock,
  options: { storage?: Record<string, unknown>; file?: Record<string, unknown>; start?: boolean; dataDir?: string } = {},
): Promise<DurablePeer> {
  const logger = recordingLogger();
  processCounter += 1;
  const config = testConfig({ dataDir: options.dataDir ?? DATA_DIR, storage: options.storage ?? {}, ...options.file });
  const node = new RegistryNode(
    {
      clock,
      rng: seededRng(processCounter),
      logger,
      // Alone on a network of its own: a cluster of one.
      transport: new SimNetwork(clock, seededRng(processCounter)).transportFor(config.self.id),
      disk,
      processIdentity: { pid: 1_000_000 + processCounter, hostname: 'test-host', processStartedAtMs: processCounter },
    },
    config,
  );
  const app = await buildServer({ node });
  await app.ready();
  if (options.start !== false) await node.start();
  return {
    node,
    app,
    logs: logger.lines,
    async register(instanceId, extra = {}) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/instances',
        payload: { service: 'orders', host: '10.0.0.1', port: 8080, instanceId, ...extra },
      });
      return { status: response.statusCode, body: response.json() };
    },
    async heartbeat(instanceId) {
      const response = await app.inject({ method: 'PUT', url: `/v1/services/orders/instances/${instanceId}/heartbeat` });
      return response.statusCode;
    },
  };
}
