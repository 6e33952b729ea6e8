/**
 * A provider that registers itself, and a consumer that calls it through pick().
 *
 *   npm run cluster                            # three local peers (another terminal)
 *   npx tsx examples/provider-consumer.ts      # this example
 *
 * test/e2e/client.test.ts runs these functions against a real cluster, so this file cannot rot.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { request } from 'undici';
import { closeOnSignals, createRegistryClient, type Instance } from 'peer-registry/client';

const LOCAL_PEERS = ['http://127.0.0.1:8761', 'http://127.0.0.1:8762', 'http://127.0.0.1:8763'];

/** The provider: an HTTP service that registers itself and stays registered while it runs. */
export async function startProvider(options: { peers: string[]; name: string; zone: string }) {
  const server = createServer((_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ servedBy: options.name }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  const registry = createRegistryClient({ peers: options.peers });
  // Heartbeats start by themselves, at the interval the peer answers; a 404 registers again.
  const registration = await registry.register({
    service: 'greeter',
    host: '127.0.0.1',
    port,
    instanceId: options.name,
    zone: options.zone,
    metadata: { version: '1.0.0' },
  });
  return {
    registry,
    registration,
    async stop() {
      // Cancel first, so consumers stop picking this instance before its socket closes.
      await registry.close();
      server.close();
    },
  };
}

/** The consumer: keeps a pool of greeters in step with the registry and calls them through pick(). */
export function startConsumer(options: { peers: string[]; zone: string }) {
  const registry = createRegistryClient({ peers: options.peers });
  const pool = new Map<string, Instance>();
  const subscription = registry.subscribe('greeter', {
    onUp: (instance) => pool.set(instance.instanceId, instance),
    onDown: (instance) => pool.delete(instance.instanceId),
  });
  return {
    registry,
    pool,
    /** Calls one greeter: same zone first, any other zone when this one has none. */
    async callGreeter(): Promise<{ servedBy: string }> {
      const target = await registry.pick('greeter', { zone: options.zone, fallback: 'round-robin' });
      const response = await request(`http://${target.host}:${target.port}/hello`);
      return (await response.body.json()) as { servedBy: string };
    },
    async stop() {
      subscription.close();
      await registry.close();
    },
  };
}

async function main(): Promise<void> {
  const providerA = await startProvider({ peers: LOCAL_PEERS, name: 'greeter-a', zone: 'a' });
  const providerB = await startProvider({ peers: [...LOCAL_PEERS].reverse(), name: 'greeter-b', zone: 'b' });
  // Opt in: Ctrl-C or SIGTERM cancels the registrations before the process exits.
  closeOnSignals(providerA.registry);
  closeOnSignals(providerB.registry);

  const consumer = startConsumer({ peers: LOCAL_PEERS, zone: 'b' });
  // greeter-b registered through another peer: replication brings it within milliseconds.
  while (consumer.pool.size < 2) await new Promise((resolve) => setTimeout(resolve, 50));
  for (let i = 0; i < 3; i++) console.log(await consumer.callGreeter()); // { servedBy: 'greeter-b' }
  await providerB.stop(); // zone b has none left: calls go to zone a
  await new Promise((resolve) => setTimeout(resolve, 500));
  console.log(await consumer.callGreeter(), [...consumer.pool.keys()]); // { servedBy: 'greeter-a' } [ 'greeter-a' ]
  await consumer.stop();
  await providerA.stop();
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
