import { status } from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AccessPort } from '../../../src/adapters/access.js';
import { LimitsPort, type LimitsSettings } from '../../../src/adapters/limits.js';
import { sha256Hex, type TokenGrant } from '../../../src/config/security.js';
import { sampledLogger } from '../../../src/log/sampled.js';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../src/xds/delta-stream.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { XdsServer, type XdsServerInit } from '../../../src/xds/server.js';
import { MAX_RESOURCE_NAMES, type DiscoveryRequest, type DiscoveryResponse } from '../../../src/xds/stream.js';
import { createTestNode } from '../../support/node.js';
import { recordingLogger } from '../../support/recording-logger.js';
import { RecordingAdsCall } from '../../support/xds.js';

/**
 * What one client may make an ADS listener hold and do (issue 33): names per stream and per
 * principal, streams per peer and per principal, tokens, request rate, and the log lines a
 * client's NACKs cost.
 */

class FakeCall extends RecordingAdsCall<DiscoveryRequest, DiscoveryResponse> {}
class FakeDeltaCall extends RecordingAdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {}

let protos: XdsProtos;
let server: XdsServer | undefined;
beforeAll(() => {
  protos = new XdsProtos();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface SetUp {
  init?: Partial<XdsServerInit>;
  tokens?: TokenGrant[];
  limits?: Partial<LimitsSettings>;
}

/** A listener with the contract's ports (tokens, rate limits, shares) and logger, as a peer gives them. */
async function setUp({ init = {}, tokens = [], limits = {} }: SetUp = {}) {
  const { node, clock } = await createTestNode();
  const logger = recordingLogger();
  const limitsPort = new LimitsPort(clock, { rateLimitPerSecond: 0, rateLimitLoopbackPerSecond: 0, rateLimitBurst: 1, rateLimitClientsMax: 100, heldSharePerPrincipalRatio: 0.25, ...limits });
  const ports = { access: new AccessPort(tokens, limitsPort), limits: limitsPort };
  server = new XdsServer(
    { views: node.views, clock, logger: sampledLogger(logger, clock), protos, ports },
    { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'auto', pushCoalesceMs: 50, ...init },
  );
  return { node, clock, logger, server };
}

function register(node: RegistryNode, service: string, port: number, namespace = 'default') {
  node.registry.register(parseRegistration({ service, host: '10.0.0.1', port, leaseDurationMs: 60_000 }, namespace, node.config.limits, node.config.cluster));
}

const unknownNames = (request: number, count: number) => Array.from({ length: count }, (_, i) => `unknown-${request}-${i}`);
const nameOf = (any: { type_url: string; value: Buffer }) => (protos.unpack(any).name ?? protos.unpack(any).cluster_name) as string;

describe('names a stream and a principal may hold', () => {
  it('an incremental stream of 8 requests of 10,000 unknown names holds at most 10,000 and is ended past that (RESOURCE_EXHAUSTED)', async () => {
    const { server } = await setUp();
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(0, MAX_RESOURCE_NAMES) });
    // Every unknown name is told as removed once: the answer is linear in the names, built from Sets.
    expect(call.responses).toHaveLength(1);
    expect(new Set(call.last().removed_resources).size).toBe(MAX_RESOURCE_NAMES);
    for (let request = 1; request < 8 && call.errors.length === 0; request += 1) {
      call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(request, MAX_RESOURCE_NAMES), response_nonce: call.last().nonce });
    }
    expect(call.errors).toEqual([{ code: status.RESOURCE_EXHAUSTED, details: expect.stringContaining(`at most ${MAX_RESOURCE_NAMES} resource names`) }]);
    expect(call.responses).toHaveLength(1);
    // The ended stream gave its names back.
    expect(server.names.heldBy('address:127.0.0.1')).toBe(0);
    expect(server.stats.refused).toBe(1);
  });

  it('counts names over every type of a stream and frees those unsubscribed', async () => {
    const { server } = await setUp();
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(0, 6_000) });
    call.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: unknownNames(1, 4_000) });
    expect(server.names.heldBy('address:127.0.0.1')).toBe(10_000);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_unsubscribe: unknownNames(0, 3_000) });
    // Subscribing the same names again adds nothing.
    call.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: unknownNames(1, 4_000) });
    expect(server.names.heldBy('address:127.0.0.1')).toBe(7_000);
    call.send({ type_url: TYPE_URLS.listener, resource_names_subscribe: unknownNames(2, 3_000) });
    expect(call.errors).toEqual([]);
    call.send({ type_url: TYPE_URLS.listener, resource_names_subscribe: ['one-too-many'] });
    expect(call.errors[0]?.code).toBe(status.RESOURCE_EXHAUSTED);
  });

  it('bounds a state-of-the-world stream over its types too', async () => {
    const { server } = await setUp();
    const call = new FakeCall();
    server.attach(call as never);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: unknownNames(0, 8_000) });
    // Replacing a type's list counts the new list, not both.
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: unknownNames(1, 9_000), response_nonce: call.last()?.nonce ?? '' });
    expect(server.names.heldBy('address:127.0.0.1')).toBe(9_000);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: unknownNames(2, 1_001) });
    expect(call.errors[0]?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(server.names.heldBy('address:127.0.0.1')).toBe(0);
  });

  it('gives each principal a share of names over all its streams; another principal is still served', async () => {
    const { server } = await setUp({ init: { resourceNamesPerPrincipalMax: 25_000 } });
    const calls = Array.from({ length: 3 }, () => new FakeDeltaCall('10.0.0.7:4000'));
    for (const call of calls) {
      server.attachDelta(call as never);
      call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(calls.indexOf(call), 10_000) });
    }
    expect(calls.map((call) => call.errors.map((error) => error.code))).toEqual([[], [], [status.RESOURCE_EXHAUSTED]]);
    expect(calls[2]!.errors[0]!.details).toContain('xds.resourceNamesPerPrincipalMax 25000');
    expect(server.names.heldBy('address:10.0.0.7')).toBe(20_000);
    const other = new FakeDeltaCall('10.0.0.8:4000');
    server.attachDelta(other as never);
    other.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(9, 10_000) });
    expect(other.errors).toEqual([]);
    calls[0]!.emit('cancelled');
    expect(server.names.heldBy('address:10.0.0.7')).toBe(10_000);
  });
});

describe('streams per peer and per principal', () => {
  it('refuses a principal past its share with RESOURCE_EXHAUSTED, serves another, and frees a slot when a stream ends', async () => {
    const { server } = await setUp({ init: { streamsMax: 4 }, limits: { heldSharePerPrincipalRatio: 0.5 } });
    const mine = Array.from({ length: 3 }, () => new FakeCall('10.0.0.7:4000'));
    for (const call of mine) server.attach(call as never);
    expect(mine.map((call) => call.errors.map((error) => error.code))).toEqual([[], [], [status.RESOURCE_EXHAUSTED]]);
    expect(mine[2]!.errors[0]!.details).toContain('address 10.0.0.7 already holds 2 xDS streams');
    const theirs = Array.from({ length: 3 }, () => new FakeCall('10.0.0.8:4000'));
    for (const call of theirs) server.attach(call as never);
    expect(theirs.map((call) => call.errors.length)).toEqual([0, 0, 1]);
    // The peer's cap is full now (4): even a new principal waits.
    const third = new FakeCall('10.0.0.9:4000');
    server.attach(third as never);
    expect(third.errors[0]!.details).toContain('xds.streamsMax');
    mine[0]!.emit('cancelled');
    const again = new FakeCall('10.0.0.7:4000');
    server.attach(again as never);
    expect(again.errors).toEqual([]);
  });
});

describe('tokens (gRPC metadata authorization: Bearer)', () => {
  const grants: TokenGrant[] = [
    { name: 'team-a-reader', sha256: sha256Hex('team-a-reader-token-0123'), namespaces: ['team-a'], scopes: ['read'] },
    { name: 'admin-only', sha256: sha256Hex('admin-only-token-0123456'), namespaces: '*', scopes: ['admin'] },
  ];

  it('refuses a stream without a token or with an unknown one (UNAUTHENTICATED), and one without the read scope', async () => {
    const { server } = await setUp({ tokens: grants });
    const none = new FakeCall();
    const wrong = new FakeCall(undefined, 'not-a-token-at-all-000');
    const admin = new FakeCall(undefined, 'admin-only-token-0123456');
    for (const call of [none, wrong, admin]) server.attach(call as never);
    expect(none.errors[0]).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringContaining('authorization: Bearer <token>') });
    expect(wrong.errors[0]?.code).toBe(status.UNAUTHENTICATED);
    expect(admin.errors[0]?.code).toBe(status.PERMISSION_DENIED);
    none.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    expect(none.responses).toHaveLength(0);
  });

  it('shows a token only the exposed namespaces it may use, and refuses a request naming another namespace (PERMISSION_DENIED)', async () => {
    const { node, server } = await setUp({ tokens: grants, init: { namespaces: ['default', 'team-a'] } });
    register(node, 'greeter', 1);
    register(node, 'greeter', 2, 'team-a');
    const call = new FakeCall(undefined, 'team-a-reader-token-0123');
    server.attach(call as never);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    expect(call.last().resources.map(nameOf)).toEqual(['greeter.team-a']);
    const named = new FakeCall(undefined, 'team-a-reader-token-0123');
    server.attach(named as never);
    named.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter.team-a'] });
    expect(named.last().resources.map(nameOf)).toEqual(['greeter.team-a']);
    // Naming another namespace's resource is refused, as /v1 answers 403.
    named.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter.team-a', 'greeter'], response_nonce: named.last().nonce });
    expect(named.errors).toEqual([{ code: status.PERMISSION_DENIED, details: 'token team-a-reader may not use namespace default (resource greeter)' }]);
  });

  it('with xds.allowAnonymous serves a stream without a token, still refusing an unknown token', async () => {
    const { node, server } = await setUp({ tokens: grants, init: { allowAnonymous: true } });
    register(node, 'greeter', 1);
    const anonymous = new FakeCall();
    const wrong = new FakeCall(undefined, 'not-a-token-at-all-000');
    server.attach(anonymous as never);
    server.attach(wrong as never);
    anonymous.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter'] });
    expect(anonymous.last().resources.map(nameOf)).toEqual(['greeter']);
    expect(wrong.errors[0]?.code).toBe(status.UNAUTHENTICATED);
  });
});

describe('request rate per principal', () => {
  it('ends a stream whose principal sends past the rate limit (RESOURCE_EXHAUSTED with what to do)', async () => {
    const { server, clock } = await setUp({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 3 } });
    const call = new FakeCall('10.0.0.7:4000');
    server.attach(call as never);
    // The stream's opening took one token of the burst of 3.
    call.send({ type_url: TYPE_URLS.cluster, resource_names: ['a'] });
    call.send({ type_url: TYPE_URLS.cluster, resource_names: ['a'], response_nonce: call.last().nonce });
    expect(call.errors).toEqual([]);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: ['a'], response_nonce: call.last().nonce });
    expect(call.errors[0]).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: expect.stringContaining('limits.rateLimitPerSecond') });
    // A loopback client is not limited by default (limits.rateLimitLoopbackPerSecond 0), as on /v1.
    const local = new FakeCall('127.0.0.1:4000');
    server.attach(local as never);
    for (let i = 0; i < 10; i += 1) local.send({ type_url: TYPE_URLS.cluster, resource_names: ['a'], response_nonce: local.last()?.nonce ?? '' });
    expect(local.errors).toEqual([]);
    await clock.advance(2_000);
  });
});

describe('NACK log lines', () => {
  it('clips a NACK message and throttles the lines, counting the rest in one summary', async () => {
    const { node, clock, logger, server } = await setUp();
    register(node, 'greeter', 1);
    const call = new FakeCall();
    server.attach(call as never);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    const huge = 'x'.repeat(1_000_000);
    for (let i = 0; i < 50; i += 1) {
      call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'], response_nonce: call.last().nonce, error_detail: { code: 3, message: huge } });
    }
    expect(server.stats.nacks).toBe(50);
    const nacks = logger.lines.filter((line) => line.msg.includes('NACK'));
    expect(nacks).toHaveLength(10);
    for (const line of nacks) expect(String(line.fields.error).length).toBeLessThan(600);
    expect(JSON.stringify(logger.lines).length).toBeLessThan(20_000);
    await clock.advance(1_000);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'], response_nonce: call.last().nonce, error_detail: { code: 3, message: 'short' } });
    expect(logger.lines.find((line) => line.fields.suppressed !== undefined)?.fields.suppressed).toBe(40);
    expect(logger.lines.at(-1)?.fields.error).toBe('short');
  });
});

describe('a refused stream', () => {
  it('takes no request after it was ended: its owner holds no names for it', async () => {
    const { server } = await setUp();
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    for (let request = 0; request < 4; request += 1) call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: unknownNames(request, MAX_RESOURCE_NAMES) });
    expect(call.errors).toHaveLength(1);
    expect(call.responses).toHaveLength(1);
    expect(server.names.heldBy('address:127.0.0.1')).toBe(0);
  });
});

describe('closing the listener', () => {
  it("gives every open stream's slot back to the peer's pool", async () => {
    const { server } = await setUp({ init: { streamsMax: 2 } });
    for (const peer of ['10.0.0.7:1', '10.0.0.8:1']) server.attach(new FakeCall(peer) as never);
    expect(server.access.held).toBe(2);
    await server.close();
    expect(server.access.held).toBe(0);
  });
});
