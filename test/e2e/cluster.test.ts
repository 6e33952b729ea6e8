import { afterEach, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { RealCluster } from '../support/real-cluster.js';
import { waitFor } from '../support/process.js';

let cluster: RealCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});


const register = (url: string, instanceId: string) =>
  callJson('POST', `${url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId, leaseDurationMs: 60_000 });

async function listed(url: string): Promise<string[]> {
  const { body } = await callJson('GET', `${url}/v1/services/orders`);
  return (body.instances as { instanceId: string }[]).map((i) => i.instanceId);
}

async function waitListed(url: string, expected: string[], what: string): Promise<void> {
  await waitFor(async () => JSON.stringify(await listed(url)) === JSON.stringify(expected), 15_000, what);
}

describe('three real peers on 127.0.0.1', () => {
  it('replicate, survive a killed peer, catch it up on restart, and heal a partition', async () => {
    cluster = await RealCluster.start({ size: 3 });
    const [a, firstB, c] = cluster.ids.map((id) => cluster!.url(id)) as [string, string, string];
    let b = firstB;

    expect((await register(a, 'one')).status).toBe(201);
    await waitListed(b, ['one'], 'peer-b to list the register made on peer-a');
    await waitListed(c, ['one'], 'peer-c to list the register made on peer-a');

    const status = await cluster.statusWithAllUp('peer-a');
    expect(status.peers.map((p: { id: string; state: string }) => `${p.id}:${p.state}`)).toEqual(['peer-b:up', 'peer-c:up']);

    // Kill peer-b: writes go on.
    await cluster.kill('peer-b');
    expect((await register(a, 'two')).status).toBe(201);
    expect((await callJson('DELETE', `${c}/v1/services/orders/instances/one`)).status).toBe(200);
    await waitListed(c, ['two'], 'peer-c to see the write made while peer-b is down');

    // Restart peer-b with an empty memory: it syncs before it is ready.
    await cluster.startPeer('peer-b');
    await cluster.waitReady('peer-b');
    // A restart may have moved peer-b to another port (its old one taken meanwhile).
    b = cluster.url('peer-b');
    expect(await listed(b)).toEqual(['two']);

    // Partition peer-a from the others: both sides keep accepting writes, then converge.
    cluster.partition(['peer-a'], ['peer-b', 'peer-c']);
    expect((await register(a, 'on-a')).status).toBe(201);
    expect((await register(b, 'on-b')).status).toBe(201);
    await waitListed(c, ['on-b', 'two'], 'peer-c to see the write of its side');
    expect(await listed(a)).toEqual(['on-a', 'two']);
    cluster.heal();
    for (const url of [a, b, c]) await waitListed(url, ['on-a', 'on-b', 'two'], 'every peer to converge after the heal');
  });
});
