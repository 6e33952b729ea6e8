import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Eureka, type EurekaLogger } from 'eureka-js-client';
import { afterEach, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { bearer, securedFile, TOKENS } from '../support/security.js';

/**
 * A real eureka-js-client (4.5.0) against a peer that requires tokens: the token travels as
 * the password of the service URL (`http://user:token@host/eureka/...`), as Spring Cloud
 * clients send it, and the instance lands in the configured Eureka namespace.
 */

const quiet: EurekaLogger = { debug() {}, info() {}, warn() {}, error() {} };
const clients: Eureka[] = [];
const started: PeerProcess[] = [];
let dir = '';
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => new Promise<void>((resolve) => client.stop(() => resolve()))));
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

function client(serviceUrl: string): Eureka {
  const eureka = new Eureka({
    logger: quiet,
    instance: {
      app: 'orders',
      hostName: 'orders-1.local',
      ipAddr: '127.0.0.1',
      port: { $: 8080, '@enabled': true },
      vipAddress: 'orders',
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
    },
    eureka: { serviceUrls: { default: [serviceUrl] }, heartbeatInterval: 100, registryFetchInterval: 100, maxRetries: 1, requestRetryDelay: 50 },
  });
  clients.push(eureka);
  return eureka;
}

const start = (eureka: Eureka) => new Promise<Error | null>((resolve) => eureka.start((error) => resolve(error ?? null)));

describe('eureka-js-client with a token in its service URL', () => {
  it('registers and discovers with the right token, and is refused with a wrong one', async () => {
    dir = await mkdtemp(join(tmpdir(), 'registry-eureka-auth-'));
    const file = join(dir, 'secured.json');
    await writeFile(file, JSON.stringify(securedFile({ limits: { rateLimitPerSecond: 1_000 } })));
    const peer = await startPeerProcess(['--port', '0', '--config', file, '--profile', 'local']);
    started.push(peer);
    const { host } = new URL(peer.url);

    const good = client(`http://orders:${TOKENS.writer}@${host}/eureka/v2/apps/`);
    expect(await start(good)).toBeNull();
    await waitFor(() => good.getInstancesByAppId('ORDERS').length === 1, 10_000, 'the client to discover itself');
    const listed = await callJson('GET', `${peer.url}/v1/services/ORDERS?namespace=team-a`, undefined, bearer(TOKENS.reader));
    expect(listed.body.instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['orders-1.local']);

    const bad = client(`http://orders:not-the-token-at-all-000@${host}/eureka/v2/apps/`);
    expect(await start(bad)).not.toBeNull();
    const anonymous = client(`http://${host}/eureka/v2/apps/`);
    expect(await start(anonymous)).not.toBeNull();
  });
});
