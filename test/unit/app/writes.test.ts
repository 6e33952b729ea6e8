import { afterEach, describe, expect, it } from 'vitest';
import { whenDurable } from '../../../src/app/durable-write.js';
import { RegistryWrites } from '../../../src/app/writes.js';
import { RegistryError } from '../../../src/errors.js';
import { inMemoryDurability, type Durability } from '../../../src/persistence/durability.js';
import { createTestNode, type TestNode } from '../../support/node.js';

const input = (instanceId: string) => ({
  namespace: 'default',
  service: 'orders',
  instanceId,
  data: { host: '10.0.0.5', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
  leaseDurationMs: 30_000,
});

/** A data dir whose barrier is released by the test, and that can refuse writes. */
function heldDurability(): Durability & { release(): void; failed: boolean } {
  let release = () => undefined as void;
  const durability = {
    restored: true,
    failed: false,
    assertWritable() {
      if (durability.failed) throw new RegistryError('REG_ERR_STORAGE', 'the data dir refuses writes');
    },
    mark: () => 1,
    barrier: () => new Promise<void>((resolve) => (release = resolve)),
    release: () => release(),
  };
  return durability;
}

let testNode: TestNode | undefined;
afterEach(async () => {
  await testNode?.node.stop();
  testNode = undefined;
});

describe('the application layer writes', () => {
  it('answer in the same tick, with no promise, when there is nothing to wait for (the heartbeat hot path)', async () => {
    testNode = await createTestNode();
    const writes = new RegistryWrites({ registry: testNode.node.registry, durability: inMemoryDurability });
    const registered = writes.register(input('a'));
    expect(registered).not.toBeInstanceOf(Promise);
    const renewed = writes.heartbeat(input('a'));
    expect(renewed).not.toBeInstanceOf(Promise);
    let answered: string | undefined;
    const answer = whenDurable(renewed, (entry) => (answered = entry.record.instanceId));
    expect(answer).toBe('a');
    expect(answered).toBe('a');
  });

  it('give a route the result only once the write is durable', async () => {
    testNode = await createTestNode();
    const durability = heldDurability();
    const writes = new RegistryWrites({ registry: testNode.node.registry, durability });
    let answered = false;
    const answer = whenDurable(writes.register(input('b')), ({ created }) => (answered = created));
    expect(answer).toBeInstanceOf(Promise);
    await Promise.resolve();
    expect(answered, 'answered before the barrier').toBe(false);
    durability.release();
    await expect(answer).resolves.toBe(true);
  });

  it('refuse a write, before touching the store, while the data dir refuses writes; a renewal still renews', async () => {
    testNode = await createTestNode();
    const durability = heldDurability();
    const writes = new RegistryWrites({ registry: testNode.node.registry, durability });
    const registered = writes.register(input('c'));
    durability.release();
    await registered;
    durability.failed = true;
    const revision = testNode.node.store.revision;
    expect(() => writes.update(input('c'), { status: 'DOWN' })).toThrow(expect.objectContaining({ code: 'REG_ERR_STORAGE' }));
    expect(() => writes.cancel(input('c'))).toThrow(expect.objectContaining({ code: 'REG_ERR_STORAGE' }));
    expect(() => writes.step((registry) => registry.cancel(input('c')))).toThrow(expect.objectContaining({ code: 'REG_ERR_STORAGE' }));
    expect(testNode.node.store.revision).toBe(revision);
    const renewed = writes.heartbeat(input('c'));
    durability.release();
    await expect(Promise.resolve(renewed)).resolves.toMatchObject({ record: { instanceId: 'c' } });
  });
});
