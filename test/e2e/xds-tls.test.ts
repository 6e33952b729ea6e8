import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, makeClientConstructor, type Client, type ClientDuplexStream } from '@grpc/grpc-js';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TYPE_URLS, XdsProtos } from '../../src/xds/protos.js';
import { startPeerProcess, type PeerProcess } from '../support/process.js';
import { xdsPortOf } from '../support/xds.js';

/**
 * xDS over TLS with the peer's certificate: raw grpc-js ADS streams (state of the world and
 * incremental) trusting the cluster's CA get their answers; a client speaking plain text gets none. (@grpc/grpc-js-xds 1.14 has no
 * TLS channel credentials for its control plane, so the stream is grpc-js's own.)
 */

let dir: string;
let peer: PeerProcess | undefined;
let url: string;
let xdsPort: number;
let ca: Buffer;
const protos = new XdsProtos();
const AdsClient = makeClientConstructor(protos.ads, 'AggregatedDiscoveryService') as unknown as new (target: string, creds: ReturnType<typeof credentials.createSsl>) => Client & {
  StreamAggregatedResources(): ClientDuplexStream<object, { resources: { type_url: string; value: Buffer }[]; nonce: string }>;
  DeltaAggregatedResources(): ClientDuplexStream<object, { resources: { name: string; version: string; resource: { type_url: string; value: Buffer } }[]; removed_resources: string[] }>;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-xds-tls-'));
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=test CA', '-keyout', 'ca.key', '-out', 'ca.crt']);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=peer-a', '-keyout', 'peer.key', '-out', 'peer.csr']);
  await writeFile(join(dir, 'peer.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl(['x509', '-req', '-in', 'peer.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'peer.ext', '-out', 'peer.crt']);
  ca = await readFile(join(dir, 'ca.crt'));
  // Both ports chosen by the peer: its start line says where the API listens (over TLS).
  await writeFile(join(dir, 'cluster.json'), JSON.stringify({ xds: { port: 0 } }));
  peer = await startPeerProcess(['--config', join(dir, 'cluster.json'), '--id', 'peer-a', '--port', '0', '--log-level', 'info', '--tls-cert', join(dir, 'peer.crt'), '--tls-key', join(dir, 'peer.key')]);
  url = peer.url.replace(/^http:/, 'https:');
  xdsPort = await xdsPortOf(peer);
  expect(peer.logs.find((entry) => entry.msg === 'xds: serving the Aggregated Discovery Service')?.tls).toBe(true);
}, 60_000);

afterAll(async () => {
  peer?.kill('SIGKILL');
  await peer?.exited;
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Opens an ADS stream, asks for `names` of one type and answers the first response (or the error). */
function firstResponse(creds: ReturnType<typeof credentials.createSsl>, typeUrl: string, names: string[]) {
  const client = new AdsClient(`127.0.0.1:${xdsPort}`, creds);
  const call = client.StreamAggregatedResources();
  return new Promise<{ resources: { type_url: string; value: Buffer }[] }>((resolve, reject) => {
    call.on('data', (response) => resolve(response));
    call.on('error', reject);
    call.write({ node: { id: 'tls-test' }, type_url: typeUrl, resource_names: names });
  }).finally(() => {
    call.cancel();
    client.close();
  });
}

describe('xDS over TLS', () => {
  it('serves ADS with the peer certificate to a client trusting the CA', async () => {
    const dispatcher = new Agent({ connect: { ca } });
    const answer = await request(`${url}/v1/instances`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ service: 'greeter', host: '10.0.0.7', port: 50051, leaseDurationMs: 60_000 }),
    });
    expect(answer.statusCode).toBe(201);
    await answer.body.dump();
    const response = await firstResponse(credentials.createSsl(ca), TYPE_URLS.endpoints, ['greeter']);
    expect(response.resources).toHaveLength(1);
    const assignment = protos.unpack(response.resources[0]!) as { cluster_name: string; endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[] };
    expect(assignment.cluster_name).toBe('greeter');
    expect(assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address.address).toBe('10.0.0.7');
  });

  it('serves incremental (delta) ADS on the same port', async () => {
    const client = new AdsClient(`127.0.0.1:${xdsPort}`, credentials.createSsl(ca));
    const call = client.DeltaAggregatedResources();
    try {
      const response = await new Promise<{ resources: { name: string; resource: { type_url: string; value: Buffer } }[]; removed_resources: string[] }>((resolve, reject) => {
        call.on('data', resolve);
        call.on('error', reject);
        call.write({ node: { id: 'tls-delta' }, type_url: TYPE_URLS.cluster, resource_names_subscribe: ['greeter', 'missing'] });
      });
      expect(response.resources.map((resource) => resource.name)).toEqual(['greeter']);
      expect(protos.unpack(response.resources[0]!.resource)).toMatchObject({ name: 'greeter', type: 'EDS' });
      expect(response.removed_resources).toEqual(['missing']);
    } finally {
      call.cancel();
      client.close();
    }
  });

  it('answers nothing to a plain-text client', async () => {
    await expect(firstResponse(credentials.createInsecure(), TYPE_URLS.listener, ['greeter'])).rejects.toMatchObject({ code: 14 });
  });
});
