import { afterEach, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

let cluster: RealCluster | undefined;
/** Nothing heartbeats here: the local profile's 3 s lease could run out before the cut heals on a loaded machine. */
const LEASE_MS = 600_000;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe('two regions of real peers with 80 ms between them', () => {
  it('replicate compressed across the slow link, keep serving through a cut, and converge after it', async () => {
    cluster = await RealCluster.start({ size: 4, regions: ['eu', 'eu', 'us', 'us'] });
    const [euA, euB, usA, usB] = cluster.ids as [string, string, string, string];
    for (const from of [euA, euB]) {
      for (const to of [usA, usB]) {
        cluster.proxy(from, to).delayMs = 40;
        cluster.proxy(to, from).delayMs = 40;
      }
    }
    // A register with enough metadata that its batch crosses the link gzip-compressed.
    const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key-${i}`, `value-${i}-${'x'.repeat(40)}`]));
    const registered = await callJson('POST', `${cluster.url(euA)}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId: 'eu-1', metadata, leaseDurationMs: LEASE_MS });
    expect(registered.status).toBe(201);
    await waitFor(async () => (await callJson('GET', `${cluster!.url(usB)}/v1/services/orders`)).body.instances.length === 1, 10_000, 'the write in the other region');
    const seen = (await callJson('GET', `${cluster.url(usB)}/v1/services/orders/instances/eu-1`)).body;
    expect(seen.metadata).toEqual(metadata);

    const status = (await callJson('GET', `${cluster.url(euA)}/v1/cluster`)).body;
    const toUs = status.peers.find((peer: { id: string }) => peer.id === usA);
    expect(toUs.region).toBe('us');
    expect(toUs.traffic.bytesSent).toBeGreaterThan(0);

    // Cut the regions apart: each side keeps taking writes.
    cluster.partition([euA, euB], [usA, usB]);
    expect((await callJson('POST', `${cluster.url(euB)}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9001, instanceId: 'eu-2', leaseDurationMs: LEASE_MS })).status).toBe(201);
    expect((await callJson('POST', `${cluster.url(usA)}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9002, instanceId: 'us-1', leaseDurationMs: LEASE_MS })).status).toBe(201);
    cluster.heal();
    for (const id of cluster.ids) {
      for (const proxyFrom of cluster.ids) if (proxyFrom !== id) cluster.proxy(proxyFrom, id).delayMs = 0;
    }
    for (const id of cluster.ids) {
      await waitFor(
        async () => (await callJson('GET', `${cluster!.url(id)}/v1/services/orders`)).body.instances.length === 3,
        15_000,
        `${id} to converge after the cut`,
      );
    }
  });
});
