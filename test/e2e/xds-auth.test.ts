import { credentials, makeClientConstructor, Metadata, status, type ClientDuplexStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TYPE_URLS, XdsProtos } from '../../src/xds/protos.js';
import { callJson } from '../support/http.js';
import { RealCluster } from '../support/real-cluster.js';
import { bearer, securedFile, TOKENS } from '../support/security.js';
import { xdsPortOf } from '../support/xds.js';

/**
 * xDS with client tokens, over a real socket: a grpc-js ADS client presents its token in the
 * call's metadata (`authorization: Bearer <token>`), as docs/xds.md says; without one, or with
 * an unknown one, the stream ends with UNAUTHENTICATED; another namespace's token gets
 * PERMISSION_DENIED for that namespace's resource.
 */

let cluster: RealCluster;
let port: number;
const protos = new XdsProtos();
const AdsClient = makeClientConstructor(protos.ads, 'AggregatedDiscoveryService');
type Ads = { StreamAggregatedResources(metadata?: Metadata): ClientDuplexStream<object, { resources: { value: Buffer }[] }>; close(): void };

/** One stream presenting `token`, one Cluster request for `name`: the first response's resource count, or the status it ended with. */
async function subscribe(name: string, token?: string): Promise<{ resources: number } | { code: number }> {
  const client = new AdsClient(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Ads;
  const metadata = new Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  const call = client.StreamAggregatedResources(metadata);
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer within 20 s')), 20_000);
      call.on('data', (response) => {
        clearTimeout(timer);
        resolve({ resources: response.resources.length });
      });
      call.on('error', (error: { code: number }) => {
        clearTimeout(timer);
        resolve({ code: error.code });
      });
      call.write({ node: { id: 'e2e-auth' }, type_url: TYPE_URLS.cluster, resource_names: [name] });
    });
  } finally {
    call.cancel();
    client.close();
  }
}

beforeAll(async () => {
  cluster = await RealCluster.start({ size: 1, file: { ...securedFile(), xds: { port: 0, namespaces: ['team-a', 'team-b'] } } });
  port = await xdsPortOf(cluster.peers.get('peer-a')!);
  const { status: registered } = await callJson(
    'POST',
    `${cluster.url('peer-a')}/v1/instances?namespace=team-a`,
    { service: 'greeter', host: '10.0.0.1', port: 8080, leaseDurationMs: 300_000 },
    bearer(TOKENS.writer),
  );
  expect(registered).toBe(201);
}, 150_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('xDS with client tokens (gRPC metadata authorization: Bearer)', () => {
  it('serves a read token its namespace, refuses no token and an unknown one (UNAUTHENTICATED), and another namespace (PERMISSION_DENIED)', async () => {
    expect(await subscribe('greeter.team-a', TOKENS.reader)).toEqual({ resources: 1 });
    expect(await subscribe('greeter.team-a')).toEqual({ code: status.UNAUTHENTICATED });
    expect(await subscribe('greeter.team-a', 'not-a-token-of-this-registry')).toEqual({ code: status.UNAUTHENTICATED });
    expect(await subscribe('greeter.team-a', TOKENS.otherTeam)).toEqual({ code: status.PERMISSION_DENIED });
  }, 60_000);
});
