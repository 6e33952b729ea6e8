import { seededRng } from '../../src/clock/rng.js';
import { resolveConfig, type ConfigFlags, type RegistryConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log/logger.js';
import { RegistryNode } from '../../src/node.js';
import { FakeClock } from './fake-clock.js';

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
  options: { file?: Record<string, unknown>; seed?: number; clock?: FakeClock; start?: boolean } = {},
): Promise<TestNode> {
  const clock = options.clock ?? new FakeClock();
  const node = new RegistryNode(
    { clock, rng: seededRng(options.seed ?? 1), logger: silentLogger },
    testConfig(options.file ?? {}),
  );
  if (options.start !== false) await node.start();
  return { clock, node };
}
