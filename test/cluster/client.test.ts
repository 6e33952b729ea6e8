import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { seededRng } from '../../src/clock/rng.js';
import { createRegistryClient, type RegistryClient } from '../../src/client/client.js';
import type { Registration } from '../../src/client/registration.js';
import type { Instance, InstanceStatus } from '../../src/client/types.js';
import { buildServer } from '../../src/http/server.js';
import type { TestCluster } from '../support/cluster.js';
import { InjectHttp } from '../support/inject-http.js';
import { startCluster, useClusterCleanup } from './helpers.js';

useClusterCleanup();

const apps: FastifyInstance[] = [];
const clients: RegistryClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

/** Serves a peer's real HTTP routes to the clients, through inject. */
async function attach(c: TestCluster, http: InjectHttp, id: string): Promise<void> {
  const app = await buildServer({ node: c.node(id) });
  await app.ready();
  apps.push(app);
  http.attach(c.node(id).config.self.url, app);
}

/** Moves virtual time in small steps, so that requests through inject complete between timers. */
async function run(c: TestCluster, ms: number): Promise<void> {
  for (let elapsed = 0; elapsed < ms; elapsed += 20) await c.advance(20);
}

/**
 * A consumer's subscriber that checks, as the callbacks come: each instance goes up and down
 * alternately, versions of one instance only grow (in order), and nothing is reported down
 * unless the test took it down (`mayBeDown`).
 */
function watcher(name: string, mayBeDown: Set<string>) {
  const up = new Map<string, string>();
  const violations: string[] = [];
  let changes = 0;
  const seenVersion = new Map<string, string>();
  const inOrder = (instance: Instance) => {
    const last = seenVersion.get(instance.instanceId);
    if (last !== undefined && instance.version <= last) violations.push(`${name}: ${instance.instanceId} went back from ${last} to ${instance.version}`);
    seenVersion.set(instance.instanceId, instance.version);
  };
  return {
    up,
    violations,
    get changes() {
      return changes;
    },
    handlers: {
      onUp: (instance: Instance) => {
        if (up.has(instance.instanceId)) violations.push(`${name}: ${instance.instanceId} up twice`);
        inOrder(instance);
        up.set(instance.instanceId, instance.version);
      },
      onDown: (instance: Instance) => {
        if (!up.has(instance.instanceId)) violations.push(`${name}: ${instance.instanceId} down without up`);
        if (!mayBeDown.has(instance.instanceId)) violations.push(`${name}: ${instance.instanceId} reported down but it is up`);
        up.delete(instance.instanceId);
      },
      onChange: (update: { changed: Instance[] }) => {
        changes += 1;
        for (const instance of update.changed) {
          inOrder(instance);
          up.set(instance.instanceId, instance.version);
        }
      },
    },
  };
}

describe('the client against a simulated cluster (real routes through inject, fake clock)', () => {
  it('delivers every change once per subscriber, in order, coalesced, through churn, a peer crash and restart, and the provider peer crash', async () => {
    const c = await startCluster({ size: 3, seed: 71 });
    const http = new InjectHttp();
    for (const id of c.ids) await attach(c, http, id);
    const url = (id: string) => `http://${id}.sim:${8761 + c.ids.indexOf(id)}`;
    const client = (order: string[], seed: number) => {
      const created = createRegistryClient({ peers: order.map(url), clock: c.clock, rng: seededRng(seed), http });
      clients.push(created);
      return created;
    };

    const provider = client(['peer-a', 'peer-b', 'peer-c'], 1);
    const orders = [
      ['peer-b', 'peer-c', 'peer-a'],
      ['peer-c', 'peer-a', 'peer-b'],
      ['peer-a', 'peer-b', 'peer-c'],
      ['peer-b', 'peer-a', 'peer-c'],
    ];
    const mayBeDown = new Set<string>();
    const watchers = orders.map((order, n) => {
      const w = watcher(`consumer ${n} (${order[0]})`, mayBeDown);
      client(order, 10 + n).subscribe('orders', w.handlers);
      return w;
    });

    const open = new Map<string, Registration>();
    const status = new Map<string, InstanceStatus>();
    let nextId = 0;
    let writes = 0;
    const register = async () => {
      const id = `i${nextId++}`;
      mayBeDown.delete(id);
      open.set(id, await provider.register({ service: 'orders', host: '10.0.0.1', port: 9000 + nextId, instanceId: id, zone: `z${nextId % 2}` }));
      status.set(id, 'UP');
      writes += 1;
    };
    const expectedUp = () => [...open.keys()].filter((id) => status.get(id) === 'UP').sort();
    const check = (when: string) => {
      for (const w of watchers) {
        expect(w.violations, when).toEqual([]);
        expect([...w.up.keys()].sort(), when).toEqual(expectedUp());
      }
    };

    for (let i = 0; i < 6; i++) await register();
    await run(c, 1_000);
    check('the first registrations');

    /** A burst: several writes at the same virtual instant, spread over the provider's registrations. */
    let round = 0;
    const churn = async (rounds: number) => {
      for (let r = 0; r < rounds; r++, round++) {
        const ids = [...open.keys()];
        const leaving = ids[round % ids.length]!;
        const flipping = ids[(round + 2) % ids.length]!;
        mayBeDown.add(leaving);
        const next: InstanceStatus = status.get(flipping) === 'UP' ? 'OUT_OF_SERVICE' : 'UP';
        if (next !== 'UP') mayBeDown.add(flipping);
        await Promise.all([
          open.get(leaving)!.close().then(() => {
            open.delete(leaving);
            status.delete(leaving);
          }),
          flipping === leaving ? undefined : open.get(flipping)!.setStatus(next).then(() => status.set(flipping, next)),
          register(),
          register(),
        ]);
        writes += 2;
        await run(c, 300);
        check(`churn round ${round}`);
      }
    };

    await churn(8);

    // The peer two consumers watch dies: they fail over; nothing that lives is reported down.
    http.detach(url('peer-b'));
    c.crash('peer-b');
    await run(c, 15_000);
    check('after peer-b crashed');
    expect(clients.filter((cl) => cl.currentPeer === url('peer-b'))).toEqual([]);
    await churn(4);

    await c.restart('peer-b');
    await attach(c, http, 'peer-b');
    await run(c, 2_000);
    await churn(4);

    // The peer the provider heartbeats dies: its heartbeats move on and the next peer takes the
    // instances over before their grace lease ends; the consumers on it fail over too.
    http.detach(url('peer-a'));
    c.crash('peer-a');
    await run(c, 60_000);
    check('after peer-a crashed');
    expect(provider.currentPeer).not.toBe(url('peer-a'));
    const survivors = c.ids.filter((id) => id !== 'peer-a');
    for (const id of survivors) {
      const owners = [...open.keys()].map((instanceId) => c.node(id).registry.find({ namespace: 'default', service: 'orders', instanceId })?.record.owner);
      expect(new Set(owners), `owners seen by ${id}`).toEqual(new Set([provider.currentPeer === url('peer-b') ? 'peer-b' : 'peer-c']));
    }
    await churn(4);

    // Coalescing and exactly-once: far fewer onChange calls than writes, however many peers.
    for (const w of watchers) expect(w.changes).toBeLessThan(writes);
    for (const consumer of clients.slice(1)) {
      const found = await consumer.discover('orders');
      expect(found.stale).toBe(false);
      expect(found.instances.map((i) => i.instanceId)).toEqual(expectedUp());
    }
    // Closing the provider cancels everything: every consumer hears every instance go down.
    for (const id of open.keys()) mayBeDown.add(id);
    await provider.close();
    open.clear();
    await run(c, 1_000);
    check('after the provider closed');
  });
});
