import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import Consul from 'consul';
import { Eureka } from 'eureka-js-client';
import { NacosNamingClient as V1Client } from 'nacos';
import { NacosNamingClient as V2Client, type NacosServiceInstance } from 'nacos-sdk-rust-binding-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { freePort } from '../support/fault-proxy.js';
import { nacosPortsOf, quietNacosLogger } from '../support/nacos-process.js';
import { retryWhenPortTaken } from '../support/ports.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * One registry, many protocols: instances registered through each Nacos client are found by the
 * Eureka client, the Consul client and dig; one registered through /v1 is pushed to both Nacos
 * subscribers.
 */
const DIG = '/usr/bin/dig';
const run = promisify(execFile);
let peer: PeerProcess;
let nacosPort: number;
let consulPort: number;
let dnsPort: number;
const v1Logger = quietNacosLogger();
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  peer = await retryWhenPortTaken(async () => {
    nacosPort = await freePort();
    while (nacosPort > 64_000) nacosPort = await freePort();
    consulPort = await freePort();
    return startPeerProcess(['--port', '0', '--nacos-port', String(nacosPort), '--consul-port', String(consulPort), '--dns-port', '0']);
  });
  await nacosPortsOf(peer);
  const dns = await waitFor(() => peer.logs.find((line) => line.msg === 'dns listening'), 30_000, 'the dns listener');
  dnsPort = Number(dns.port);
  await waitFor(() => peer.logs.some((line) => line.msg === 'Consul API listening'), 60_000, 'the Consul listener');
}, 120_000);

afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  peer?.kill();
  await peer?.exited;
});

describe('a Nacos-registered instance in every protocol', () => {
  it('is found by Eureka, Consul and DNS clients, and a /v1 registration is pushed to v1 and v2 Nacos subscribers', async () => {
    const v1 = new V1Client({ logger: v1Logger as never, serverList: `127.0.0.1:${nacosPort}`, namespace: 'public' });
    closers.push(() => (v1 as unknown as { close(): Promise<void> }).close());
    await v1.ready();
    await v1.registerInstance('xproto-v1', { ip: '127.0.0.11', port: 9401 } as never);
    const v2 = new V2Client({ serverAddr: `127.0.0.1:${nacosPort}`, namespace: '' });
    await v2.registerInstance('xproto-v2', 'DEFAULT_GROUP', { ip: '127.0.0.12', port: 9402 });

    // Eureka: the apps, upper-cased.
    const eureka = new Eureka({
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      instance: { app: 'watcher', hostName: 'localhost', ipAddr: '127.0.0.1', port: { $: 1, '@enabled': true }, vipAddress: 'watcher', dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' } },
      eureka: { serviceUrls: { default: [`${peer.url}/eureka/v2/apps/`] }, registerWithEureka: false, registryFetchInterval: 200 },
    } as never);
    closers.push(() => new Promise((resolve) => eureka.stop(resolve)));
    await new Promise<void>((resolve, reject) => eureka.start((error) => (error ? reject(error) : resolve())));
    await waitFor(() => eureka.getInstancesByAppId('XPROTO-V1').length === 1 && eureka.getInstancesByAppId('XPROTO-V2').length === 1, 20_000, 'Eureka to see both');
    expect(eureka.getInstancesByAppId('XPROTO-V2')[0]).toMatchObject({ ipAddr: '127.0.0.12', status: 'UP' });

    // Consul: passing service entries.
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    for (const [service, address] of [['xproto-v1', '127.0.0.11'], ['xproto-v2', '127.0.0.12']]) {
      const entries = (await consul.health.service({ service: service!, passing: true })) as { Service: { Address: string } }[];
      expect(entries.map((entry) => entry.Service.Address)).toEqual([address]);
    }

    // DNS.
    if (existsSync(DIG)) {
      for (const [service, address] of [['xproto-v1', '127.0.0.11'], ['xproto-v2', '127.0.0.12']]) {
        const { stdout } = await run(DIG, ['@127.0.0.1', '-p', String(dnsPort), '+time=2', '+tries=2', '+short', `${service}.service.registry`, 'A'], { timeout: 20_000 });
        expect(stdout.trim()).toBe(address);
      }
    }

    // The other way round: /v1 registers into the Nacos services; both subscribers are pushed.
    const v1Seen: { ip: string }[][] = [];
    const v2Seen: NacosServiceInstance[][] = [];
    v1.subscribe('xproto-v1', (hosts: { ip: string }[]) => v1Seen.push(hosts));
    await v2.subscribe('xproto-v1', 'DEFAULT_GROUP', [], (error, instances) => {
      if (!error) v2Seen.push(instances);
    });
    await waitFor(() => v1Seen.length > 0 && v2Seen.length > 0, 20_000, 'both subscriptions');
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // past the v1 client's first poll
    expect((await callJson('POST', `${peer.url}/v1/instances`, { service: 'xproto-v1', host: '127.0.0.13', port: 9403, leaseDurationMs: 60_000 })).status).toBe(201);
    const at = Date.now();
    await waitFor(() => v1Seen.at(-1)?.length === 2 && v2Seen.at(-1)?.length === 2, 5_000, 'both Nacos subscribers to be pushed the /v1 instance');
    expect(Date.now() - at).toBeLessThan(1_000);
    expect(v1Seen.at(-1)!.map((host) => host.ip).sort()).toEqual(['127.0.0.11', '127.0.0.13']);
  }, 120_000);
});
