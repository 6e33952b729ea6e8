import { afterEach, describe, expect, it } from 'vitest';
import { callJson as call } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

let cluster: RealCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Long enough that a restart on a loaded machine leaves a client time to heartbeat within its grace lease. */
const LEASE_MS = 6_000;

async function listed(url: string): Promise<string[]> {
  const { body } = await call('GET', `${url}/v1/services/orders`);
  return (body.instances as { instanceId: string }[]).map((i) => i.instanceId).sort();
}

describe('a three-peer cluster with a data dir on every peer', () => {
  it('fully restarted (kill -9 of all three) keeps every heartbeating instance, and no client is told 404', async () => {
    cluster = await RealCluster.start({ size: 3, dataDirs: true, args: ['--profile', 'local'] });
    const live = cluster;
    const urls = () => live.ids.map((id) => live.url(id));

    // Twelve instances, four registered on each peer.
    const ids = Array.from({ length: 12 }, (_, i) => `restart-${i}`);
    for (const [i, id] of ids.entries()) {
      const answer = await call('POST', `${urls()[i % 3]}/v1/instances`, {
        service: 'orders', host: '127.0.0.1', port: 9000 + i, instanceId: id, leaseDurationMs: LEASE_MS,
      });
      expect(answer.status).toBe(201);
    }
    for (const url of urls()) await waitFor(async () => (await listed(url)).length === ids.length, 15_000, `${url} to list all twelve`);

    // Clients heartbeat every second. A third heartbeat their own peer and stay with it whatever
    // happens; a third heartbeat another peer than the one they registered on; a third fail over to
    // the next peer when theirs refuses the connection or is not ready (as the client SDK does).
    const statuses = new Map<number, number>();
    const bad: string[] = [];
    let heartbeating = true;
    const beat = async (i: number): Promise<void> => {
      const preferred = i % 3 === 1 ? (i + 1) % 3 : i % 3;
      const tries = i % 3 === 2 ? [0, 1, 2].map((k) => (preferred + k) % 3) : [preferred];
      for (const index of tries) {
        let status: number;
        try {
          status = (await call('PUT', `${urls()[index]}/v1/services/orders/instances/${ids[i]}/heartbeat`)).status;
        } catch {
          continue; // connection refused: the peer is down
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status !== 200 && status !== 503) bad.push(`${ids[i]} on ${live.ids[index]}: ${status}`);
        if (status === 200) return;
      }
    };
    const clients = Promise.all(
      ids.map(async (_, i) => {
        const until = Date.now() + 45_000;
        while (heartbeating && Date.now() < until) {
          await beat(i);
          await sleep(1_000);
        }
      }),
    );

    await sleep(2_000);
    await Promise.all(live.ids.map((id) => live.kill(id, 'SIGKILL')));
    const killedAt = Date.now();
    // Staggered restarts: the last peer is down for longer than a lease.
    for (const id of live.ids) {
      await sleep(2_500);
      if (id === live.ids.at(-1)) expect(Date.now() - killedAt).toBeGreaterThan(LEASE_MS);
      await live.startPeer(id);
    }
    await Promise.all(live.ids.map((id) => live.waitReady(id)));
    await sleep(LEASE_MS * 2); // past every restored grace lease and every lease
    heartbeating = false;
    await clients;

    expect(bad).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(ids.length * 10);
    for (const url of urls()) {
      await waitFor(async () => JSON.stringify(await listed(url)) === JSON.stringify([...ids].sort()), 15_000, `${url} to list every instance`);
    }
  }, 90_000);
});
