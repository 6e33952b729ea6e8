import { seededRng } from '../../src/clock/rng.js';
import { resolveConfig, type ConfigFlags, type RegistryConfig } from '../../src/config/load.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { RegistryNode } from '../../src/node.js';
import { FakeClock } from './fake-clock.js';
import { SimNetwork } from './sim-network.js';

/** A validated config from a partial cluster file, with no environment. */
export function testConfig(file: Record<string, unknown> = {}, flags: ConfigFlags = {}): RegistryConfig {
  return resolveConfig(file, {}, flags);
}

export interface TestNode {
  clock: FakeClock;
  node: RegistryNode;
}

/** One peer on a fake clock with a seeded random source; started unless `start` is false. */
export async function createTestNode(
  options: { file?: Record<string, unknown>; seed?: number; clock?: FakeClock; start?: boolean; logger?: Logger } = {},
): Promise<TestNode> {
  const clock = options.clock ?? new FakeClock();
  const config = testConfig(options.file ?? {});
  const rng = seededRng(options.seed ?? 1);
  // A network with nobody else on it: a cluster of one.
  const transport = new SimNetwork(clock, rng).transportFor(config.self.id);
  const node = new RegistryNode({ clock, rng, logger: options.logger ?? silentLogger, transport }, config);
  if (options.start !== false) {
    // Start-up sync may call peers over the simulated network: let virtual time run meanwhile.
    let started = false;
    const starting = node.start().then(() => {
      started = true;
    });
    await clock.advanceUntil(() => started, 120_000, 100);
    await starting;
  }
  return { clock, node };
}
