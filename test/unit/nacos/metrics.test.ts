import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { GrpcConnections } from '../../../src/nacos/grpc/connections.js';
import { payloadOf } from '../../../src/nacos/grpc/protocol.js';
import { createTestNacos, form, testGrpcConnections, type TestNacos } from '../../support/nacos.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

let t: TestNacos;
let grpc: GrpcConnections | undefined;
afterEach(async () => {
  grpc?.close();
  await t?.close();
});

const BASE = '/nacos/v1/ns';
const OPS = 'ops-token-0123456789';
const scrape = async () => parsePrometheusText((await t.native.inject({ url: '/metrics', headers: { authorization: `Bearer ${OPS}` } })).body);

describe('Nacos adapter metrics (node.adapterMetrics, adapter "nacos")', () => {
  it('move with each request outcome, the held pools and the pushes with their change-to-push delay', async () => {
    t = await createTestNacos({ file: { security: { tokens: [
          { name: 'writer', token: 'writer-token-0123456789', namespaces: ['*'], scopes: ['write'] },
          { name: 'ops', token: OPS, namespaces: ['*'], scopes: ['admin'] },
        ] } } });
    const token = 'writer-token-0123456789';
    const before = await scrape();
    expect(sampleValue(before, 'registry_adapter_requests_total', { adapter: 'nacos', operation: 'instance.register', outcome: 'ok' }) ?? 0).toBe(0);
    // v1: one register, one refused (no token), one bad input; a list with udpPort holds a push target.
    await t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form({ serviceName: 'web', ip: '10.0.0.1', port: '80', accessToken: token }) });
    await t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form({ serviceName: 'web', ip: '10.0.0.1', port: '80' }) });
    await t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form({ serviceName: 'web', ip: 'not an ip', port: '80', accessToken: token }) });
    await t.app.inject({ url: `${BASE}/instance/list?serviceName=web&udpPort=40001&accessToken=${token}`, remoteAddress: '10.0.0.9' });
    // v2: a connection (a held slot) and its register.
    grpc = testGrpcConnections(t, { perConnectionMax: 4 });
    const instance = { ip: '10.0.0.2', port: 90, weight: 1, healthy: true, enabled: true, ephemeral: true, clusterName: 'DEFAULT', metadata: {} };
    await grpc.request('10.0.0.3:5000', payloadOf('InstanceRequest', { type: 'registerInstance', serviceName: 'web', instance, headers: { accessToken: token } }));
    // A v2 subscriber whose stream stops taking writes: it is pushed the change it missed when it drains.
    const stream = Object.assign(new EventEmitter(), { write: () => false });
    grpc.streamed('10.0.0.3:5000', stream, payloadOf('ConnectionSetupRequest', { headers: { accessToken: token } }));
    await grpc.request('10.0.0.3:5000', payloadOf('SubscribeServiceRequest', { serviceName: 'web', clusters: '', subscribe: true, headers: { accessToken: token } }));
    await grpc.request('10.0.0.3:5000', payloadOf('InstanceRequest', { type: 'registerInstance', serviceName: 'web', instance: { ...instance, port: 91 }, headers: { accessToken: token } }));
    await t.clock.advance(0);
    await grpc.request('10.0.0.3:5000', payloadOf('InstanceRequest', { type: 'registerInstance', serviceName: 'web', instance: { ...instance, port: 92 }, headers: { accessToken: token } }));
    await t.clock.advance(250);
    stream.emit('drain');
    const after = await scrape();
    const requests = (operation: string, outcome: string) => sampleValue(after, 'registry_adapter_requests_total', { adapter: 'nacos', operation, outcome });
    expect([requests('instance.register', 'ok'), requests('instance.register', 'unauthenticated'), requests('instance.register', 'bad_input')]).toEqual([1, 1, 1]);
    expect(requests('instance.list', 'ok')).toBe(1);
    expect([requests('grpc InstanceRequest', 'ok'), requests('grpc SubscribeServiceRequest', 'ok')]).toEqual([3, 1]);
    expect(sampleValue(after, 'registry_adapter_held', { adapter: 'nacos', pool: 'udp_push_targets' })).toBe(1);
    expect(sampleValue(after, 'registry_adapter_held', { adapter: 'nacos', pool: 'grpc_connections' })).toBe(1);
    // Two flushes (the registers of one tick make one push): UDP pushes both in the tick of the
    // change (0 s on this clock); gRPC the first at once (its write backs the stream up), the
    // second 250 ms after its change, on drain.
    expect(t.push!.counts.sent).toBe(2);
    expect(sampleValue(after, 'registry_adapter_pushes_total', { adapter: 'nacos' })).toBe(4);
    expect(sampleValue(after, 'registry_adapter_push_delay_seconds_count', { adapter: 'nacos' })).toBe(4);
    expect(sampleValue(after, 'registry_adapter_push_delay_seconds_sum', { adapter: 'nacos' })).toBeCloseTo(0.25, 3);
  });
});
