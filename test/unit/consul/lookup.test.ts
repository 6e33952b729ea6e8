import { afterEach, describe, expect, it, vi } from 'vitest';
import { applicationOf } from '../../../src/app/application.js';
import { ConsulDirectory } from '../../../src/consul/directory.js';
import { findByServiceId } from '../../../src/consul/lookup.js';
import { readsBudget } from '../../../src/http/loop-budget.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

afterEach(() => vi.restoreAllMocks());

describe('findByServiceId: an ID Consul did not register', () => {
  it('looks in every service of the namespace, asking the reads budget before each, and finds the one holding it', async () => {
    const { node } = await createTestNode();
    try {
      for (let i = 0; i < 50; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i}` }));
      node.registry.register(instance('i-7', { service: 'other', namespace: 'team-a' }));
      const reads = applicationOf(node).reads;
      const directory = new ConsulDirectory(node.store);
      // A budget spent at every look: the walk yields before every service, and still answers.
      const spent = vi.spyOn(readsBudget, 'spent').mockReturnValue(true);
      expect((await findByServiceId(reads, directory, 'default', 'i-42'))?.record.service).toBe('svc-42');
      expect(await findByServiceId(reads, directory, 'default', 'unknown')).toBeUndefined();
      expect(spent).toHaveBeenCalledTimes(50 + 50);
      // Two services holding the ID: refused as ambiguous.
      node.registry.register(instance('i-3', { service: 'svc-9' }));
      await expect(findByServiceId(reads, directory, 'default', 'i-3')).rejects.toMatchObject({ status: 409 });
      directory.close();
    } finally {
      await node.stop();
    }
  });
});
