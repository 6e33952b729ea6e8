import { afterEach, describe, expect, it } from 'vitest';
import { startConsumer, startProvider } from '../../examples/provider-consumer.js';
import { createRegistryClient, type Instance, type RegistryClient } from '../../src/client/index.js';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

let cluster: RealCluster | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await cluster?.stop();
  cluster = undefined;
});

function client(peers: string[]): RegistryClient {
  const created = createRegistryClient({ peers, requestTimeoutMs: 5_000 }); // peers here die (refused at once), never hang: a long timeout only keeps a slow first call on a loaded machine from switching peers
  cleanups.push(() => created.close());
  return created;
}

/** Owners of the service's instances as one peer lists them. */
async function owners(url: string): Promise<Record<string, string>> {
  const { body } = await callJson('GET', `${url}/v1/services/orders`);
  return Object.fromEntries((body.instances as Instance[]).map((i) => [i.instanceId, i.owner]));
}

describe('the client against three real peers', () => {
  it('provider and consumer both fail over when their peers die; the consumer keeps picking live instances and hears of no false down', async () => {
    cluster = await RealCluster.start({ size: 3 });
    const [x, y, z] = ['peer-a', 'peer-b', 'peer-c'];
    const url = (id: string) => cluster!.url(id);

    // The provider heartbeats X; the consumer watches Y, then X, then Z.
    const provider = client([url(x), url(y), url(z)]);
    const one = await provider.register({ service: 'orders', host: '127.0.0.1', port: 9001, instanceId: 'one', zone: 'z1' });
    const two = await provider.register({ service: 'orders', host: '127.0.0.1', port: 9002, instanceId: 'two', zone: 'z2' });
    expect(one.heartbeatIntervalMs).toBe(1_000); // the local profile's
    expect(provider.currentPeer).toBe(url(x));

    const consumer = client([url(y), url(x), url(z)]);
    const downs: string[] = [];
    const ups: string[] = [];
    consumer.subscribe('orders', { onUp: (i) => ups.push(i.instanceId), onDown: (i) => downs.push(i.instanceId) });
    await waitFor(() => ups.length === 2, 10_000, 'the consumer to hear of both instances');
    expect(ups.sort()).toEqual(['one', 'two']);
    expect(consumer.currentPeer).toBe(url(y));

    // Pick all along, as an application would: never an instance the consumer was told is down.
    const registered = new Set(['one', 'two']);
    const picked = new Map<string, number>();
    const pickErrors: string[] = [];
    let picking = true;
    const picker = (async () => {
      while (picking) {
        try {
          const instance = await consumer.pick('orders', 'round-robin');
          if (!registered.has(instance.instanceId) || downs.includes(instance.instanceId)) pickErrors.push(`picked ${instance.instanceId}, which is down`);
          picked.set(instance.instanceId, (picked.get(instance.instanceId) ?? 0) + 1);
        } catch (error) {
          pickErrors.push((error as Error).message);
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    cleanups.push(async () => {
      picking = false;
      await picker;
    });

    // Kill Y: the consumer's stream breaks and it resyncs from the next peer (X).
    await cluster.kill(y);
    await waitFor(async () => consumer.currentPeer === url(x) && !(await consumer.discover('orders')).stale && (await consumer.discover('orders')).peer === url(x), 10_000, 'the consumer to watch through X');

    // Kill X: the provider's heartbeats move on (Y is dead too) to Z, which takes both
    // instances over; the consumer's stream moves to Z as well.
    const picksBefore = [...picked.values()].reduce((a, b) => a + b, 0);
    await cluster.kill(x);
    await waitFor(() => provider.currentPeer === url(z), 10_000, 'the provider to heartbeat Z');
    await waitFor(async () => JSON.stringify(await owners(url(z))) === JSON.stringify({ one: z, two: z }), 15_000, 'Z to take both instances over');
    await waitFor(async () => consumer.currentPeer === url(z) && (await consumer.discover('orders')).peer === url(z), 10_000, 'the consumer to watch through Z');
    // Heartbeats keep flowing to Z for a while: the takeover holds, nothing is evicted.
    const beats = one.heartbeats;
    await waitFor(() => one.heartbeats >= beats + 3, 10_000, 'three more heartbeats');
    expect(await owners(url(z))).toEqual({ one: z, two: z });
    expect((await consumer.discover('orders')).instances.map((i) => i.instanceId)).toEqual(['one', 'two']);

    const picksAfter = [...picked.values()].reduce((a, b) => a + b, 0);
    expect(picksAfter).toBeGreaterThan(picksBefore);
    expect(pickErrors).toEqual([]);
    expect(downs).toEqual([]);
    expect(picked.get('one')).toBeGreaterThan(0);
    expect(picked.get('two')).toBeGreaterThan(0);

    // Stop one instance: the consumer hears it go down, and stops picking it.
    await two.close();
    await waitFor(() => downs.length === 1, 5_000, 'the consumer to hear that two went down');
    expect(downs).toEqual(['two']);
    const instance = await consumer.pick('orders');
    expect(instance.instanceId).toBe('one');
    await new Promise((resolve) => setTimeout(resolve, 200));
    picking = false;
    await picker;
    expect(pickErrors).toEqual([]);
    expect(one.reRegistrations).toBe(0);
  });

  it('runs the README example: a provider per zone, a consumer calling through pick with zone preference', async () => {
    cluster = await RealCluster.start({ size: 3 });
    const peers = cluster.ids.map((id) => cluster!.url(id));
    const greeterA = await startProvider({ peers, name: 'greeter-a', zone: 'a' });
    cleanups.push(() => greeterA.stop());
    const greeterB = await startProvider({ peers: [...peers].reverse(), name: 'greeter-b', zone: 'b' });
    cleanups.push(() => greeterB.stop());
    const consumer = startConsumer({ peers, zone: 'b' });
    cleanups.push(() => consumer.stop());

    // greeter-b registered through another peer than the one the consumer watches: it shows
    // once replication brings it there (milliseconds).
    await waitFor(() => consumer.pool.size === 2, 5_000, 'both greeters in the pool');
    for (let i = 0; i < 3; i++) expect(await consumer.callGreeter()).toEqual({ servedBy: 'greeter-b' });
    await greeterB.stop();
    await waitFor(() => consumer.pool.size === 1, 5_000, 'greeter-b to leave the pool');
    expect([...consumer.pool.keys()]).toEqual(['greeter-a']);
    expect(await consumer.callGreeter()).toEqual({ servedBy: 'greeter-a' });
    await consumer.stop();
    await greeterA.stop();
    // Everything was cancelled on the way out.
    await waitFor(async () => (await callJson('GET', `${peers[1]}/v1/services/greeter`)).body.instances.length === 0, 5_000, 'no greeter left');
  });
});
