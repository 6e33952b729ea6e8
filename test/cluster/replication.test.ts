import { describe, expect, it } from 'vitest';
import { compareVersions } from '../../src/clock/hlc.js';
import { instance } from '../support/cluster.js';
import { startCluster, useClusterCleanup, visibleIds } from './helpers.js';

useClusterCleanup();


describe('replication between equal peers', () => {
  it('starts ready, and a register on one peer is listed on every peer within milliseconds', async () => {
    const c = await startCluster({ size: 3 });
    for (const id of c.ids) expect(c.node(id).ready).toBe(true);
    c.node('peer-a').registry.register(instance('i-1'));
    await c.advance(20);
    for (const id of c.ids) expect(visibleIds(c, id)).toEqual(['i-1']);
    const record = c.node('peer-b').registry.find(instance('i-1'))!.record;
    expect(record.owner).toBe('peer-a');
  });

  it('replicates a cancel and a status change', async () => {
    const c = await startCluster({ size: 3 });
    c.node('peer-a').registry.register(instance('i-1'));
    c.node('peer-a').registry.register(instance('i-2'));
    await c.advance(20);
    c.node('peer-b').registry.cancel(instance('i-1'));
    c.node('peer-c').registry.update(instance('i-2'), { status: 'OUT_OF_SERVICE' });
    await c.advance(20);
    for (const id of c.ids) {
      expect(visibleIds(c, id)).toEqual(['i-2']);
      expect(c.node(id).registry.find(instance('i-2'))?.record.data.status).toBe('OUT_OF_SERVICE');
      expect(c.node(id).registry.find(instance('i-2'))?.record.owner).toBe('peer-a');
    }
    expect(c.converged()).toBe(true);
  });

  it('sends nothing between peers for heartbeats, wherever they land', async () => {
    const c = await startCluster({ size: 3, cluster: { antiEntropyIntervalMs: 600_000 } });
    c.node('peer-a').registry.register(instance('i-1'));
    await c.advance(50);
    const before = c.node('peer-a').replicator.stats();
    for (let i = 0; i < 20; i++) {
      c.node(c.ids[i % 3]!).registry.heartbeat(instance('i-1'));
      await c.advance(1_000);
    }
    const after = c.node('peer-a').replicator.stats();
    for (const peer of ['peer-b', 'peer-c']) expect(after[peer]!.recordsSent).toBe(before[peer]!.recordsSent);
    expect(c.node('peer-b').replicator.stats()['peer-a']!.recordsSent).toBe(0);
    expect(c.node('peer-b').registry.find(instance('i-1'))?.record.owner).toBe('peer-a');
  });

  it('never re-replicates a replicated write', async () => {
    const c = await startCluster({ size: 3 });
    c.node('peer-a').registry.register(instance('i-1'));
    await c.advance(50);
    for (const id of ['peer-b', 'peer-c']) {
      for (const stats of Object.values(c.node(id).replicator.stats())) expect(stats.recordsSent).toBe(0);
    }
  });

  it('sends a key written again before its batch went once, as last written', async () => {
    const c = await startCluster({ size: 2, cluster: { antiEntropyIntervalMs: 600_000 } });
    const a = c.node('peer-a');
    a.registry.register(instance('i-1'));
    a.registry.update(instance('i-1'), { status: 'OUT_OF_SERVICE' });
    a.registry.update(instance('i-1'), { status: 'STARTING' });
    await c.advance(50);
    expect(a.replicator.stats()['peer-b']!.recordsSent).toBe(1);
    expect(c.node('peer-b').registry.find(instance('i-1'))?.record.data.status).toBe('STARTING');
  });

  it('puts a failed batch back without the writes superseded while it was out, then sends the newest', async () => {
    const c = await startCluster({ size: 2, cluster: { antiEntropyIntervalMs: 600_000 } });
    const a = c.node('peer-a');
    c.network.cutOneWay('peer-a', 'peer-b');
    a.registry.register(instance('i-1'));
    a.registry.register(instance('i-2'));
    await c.advance(30);
    expect(a.replicator.stats()['peer-b']).toMatchObject({ queued: 0, inFlight: 1 });
    a.registry.update(instance('i-1'), { status: 'OUT_OF_SERVICE' });
    await c.advance(5_000);
    const stats = a.replicator.stats()['peer-b']!;
    expect(stats.failures.transient).toBeGreaterThan(0);
    // The update, and i-2 put back; i-1's first write is superseded and never sent again.
    expect(stats.queued).toBe(2);
    c.network.heal();
    await c.advance(10_000);
    expect(visibleIds(c, 'peer-b')).toEqual(['i-1', 'i-2']);
    expect(c.node('peer-b').registry.find(instance('i-1'))?.record.data.status).toBe('OUT_OF_SERVICE');
    expect(a.replicator.stats()['peer-b']).toMatchObject({ queued: 0, recordsSent: 2 });
  });

  it('lets a later write win whatever the peers clocks say', async () => {
    // peer-a runs 5 s ahead, peer-b 5 s behind.
    const c = await startCluster({ size: 3, skewsMs: [5_000, -5_000, 0] });
    c.node('peer-a').registry.register(instance('i-1', { data: { ...instance('x').data, port: 1 } }));
    await c.advance(20);
    const first = c.node('peer-b').registry.find(instance('i-1'))!.record.version;
    c.node('peer-b').registry.register(instance('i-1', { data: { ...instance('x').data, port: 2 } }));
    await c.advance(20);
    for (const id of c.ids) {
      const record = c.node(id).registry.find(instance('i-1'))!.record;
      expect(record.data.port).toBe(2);
      expect(record.owner).toBe('peer-b');
      expect(compareVersions(first, record.version)).toBeLessThan(0);
    }
  });
});
