import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildServer } from '../../src/http/server.js';
import { createTestNode, type TestNode } from './node.js';
import { basic, bearer, CLUSTER_SECRET, peerHeaders, securedFile, TOKENS } from './security.js';

/**
 * Fuzzing every route: random path parameters, query strings, bodies, content types and
 * credentials, against one peer on a fake clock. The property: never a 5xx, never a crash,
 * and a refused request (4xx) leaves the store as it was. Used by the unit test (a few
 * thousand cases) and by bench/fuzz-soak.ts (as many as asked for).
 */

export interface FuzzTarget extends TestNode {
  app: FastifyInstance;
  routes: string[];
}

/** A peer with a few instances to act on; `secured` turns every guard on. */
export async function fuzzTarget(secured: boolean): Promise<FuzzTarget> {
  const file = secured ? securedFile() : { limits: { rateLimitPerSecond: 0 } };
  const testNode = await createTestNode({ file });
  const routes: string[] = [];
  const app = await buildServer({ node: testNode.node, onRoute: (method, url) => routes.push(`${method} ${url}`) });
  await app.ready();
  for (const [namespace, id] of [['default', 'i-1'], ['team-a', 'i-1'], ['team-a', 'i-2']] as const) {
    const answer = await app.inject({
      method: 'POST',
      url: `/v1/instances?namespace=${namespace}`,
      headers: secured ? bearer(TOKENS.root) : {},
      payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: id, leaseDurationMs: 600_000 },
    });
    if (answer.statusCode !== 201) throw new Error(`fixture register answered ${answer.statusCode}: ${answer.body}`);
  }
  // Watch streams and long polls end at once, so that no request waits on virtual time.
  testNode.node.watch.closeAll();
  return { ...testNode, app, routes };
}

const QUERY_KEYS = ['namespace', 'services', 'status', 'index', 'wait', 'near', 'group', 'value', 'lastDirtyTimestamp', 'overriddenstatus', 'key', 'x'];
const NAMES = ['orders', 'ORDERS', 'i-1', 'i-2', 'team-a', 'default', 'UP', 'OUT_OF_SERVICE', 'all', '0', '30s', 'a,b', '*', ''];

const text = fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }));

const registerLike = fc.record(
  {
    service: text,
    host: fc.oneof(fc.constantFrom('10.0.0.5', '::1', 'a.example', ''), fc.string(), fc.integer()),
    port: fc.oneof(fc.integer({ min: -10, max: 70_000 }), text),
    instanceId: text,
    namespace: text,
    group: text,
    status: text,
    weight: fc.oneof(fc.double(), text),
    metadata: fc.oneof(fc.dictionary(fc.string({ maxLength: 200 }), fc.oneof(fc.string({ maxLength: 600 }), fc.integer()), { maxKeys: 40 }), fc.jsonValue()),
    leaseDurationMs: fc.oneof(fc.integer(), text),
    selfPreservation: text,
    from: fc.oneof(text, fc.jsonValue({ maxDepth: 2 })),
    records: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }),
    instance: fc.jsonValue({ maxDepth: 3 }),
  },
  { requiredKeys: [] },
);

/** Mostly valid bodies, so that writes succeed too and later cases meet more state. */
const validRegister = fc.record({
  service: fc.constantFrom('orders', 'billing'),
  host: fc.constantFrom('10.0.0.5', 'a.example', '::1'),
  port: fc.integer({ min: 1, max: 65_535 }),
  instanceId: fc.constantFrom('i-1', 'i-2', 'i-3'),
  group: fc.constantFrom('blue', 'DEFAULT_GROUP', undefined),
  status: fc.constantFrom('UP', 'DOWN', undefined),
  metadata: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
});
const validEureka = fc.record({
  app: fc.constantFrom('ORDERS', 'orders', 'BILLING'),
  instanceId: fc.constantFrom('i-1', 'e-1'),
  hostName: fc.constantFrom('h1.example', '10.0.0.7'),
  ipAddr: fc.constantFrom('10.0.0.7', 'nonsense'),
  status: fc.constantFrom('UP', 'DOWN', 'UNKNOWN', 'WEIRD'),
  port: fc.record({ $: fc.oneof(fc.integer({ min: 0, max: 70_000 }), fc.constant('8080')), '@enabled': fc.constantFrom('true', 'false') }),
  dataCenterInfo: fc.constant({ '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' }),
  metadata: fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
});

const body = fc.oneof(
  fc.constant(undefined),
  validRegister.map((value) => JSON.stringify(value)),
  validEureka.map((instance) => JSON.stringify({ instance })),
  fc.constantFrom('{"status":"UP"}', '{"status":"OUT_OF_SERVICE"}', '{"selfPreservation":"auto"}', '{"partitionGuard":"off"}'),
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  registerLike.map((value) => JSON.stringify(value)),
  fc.string({ maxLength: 200 }),
  fc.string({ maxLength: 100 }).map((value) => `<instance><app>${value}</app><instanceId>${value}</instanceId></instance>`),
  fc.uint8Array({ maxLength: 100 }).map((bytes) => Buffer.from(bytes)),
);

const contentType = fc.constantFrom(undefined, 'application/json', 'application/json', 'application/xml', 'text/plain', 'application/x-www-form-urlencoded');

const credentials = fc.constantFrom(
  'none',
  'root',
  'reader',
  'writer',
  'admin',
  'otherTeam',
  'basic-writer',
  'wrong',
  'secret-as-token',
  'garbage',
  'signed',
  'signed',
  'signed-gzip',
  'signed-wrong',
);

const fuzzCase = (routes: string[]) =>
  fc.record({
    route: fc.constantFrom(...routes),
    params: fc.array(text, { minLength: 3, maxLength: 3 }),
    query: fc.dictionary(fc.constantFrom(...QUERY_KEYS), fc.oneof(text, fc.array(text, { maxLength: 3 })), { maxKeys: 4 }),
    body,
    contentType,
    gzip: fc.boolean(),
    credentials,
  });

type FuzzCase = ReturnType<typeof fuzzCase> extends fc.Arbitrary<infer T> ? T : never;

/** Builds the request of one case (signing it when the case asks, over the bytes as sent). */
function requestOf(target: FuzzTarget, input: FuzzCase): InjectOptions {
  const [method, pattern] = input.route.split(' ') as [string, string];
  let index = 0;
  const path = pattern.replace(/:\w+/g, () => encodeURIComponent(input.params[index++ % input.params.length] || 'x'));
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(input.query)) for (const one of [value].flat()) search.append(key, one);
  const query = search.toString();
  const url = `${path}${query ? `?${query}` : ''}`;
  let payload: string | Buffer | undefined = method === 'GET' || method === 'HEAD' ? undefined : input.body;
  const headers: Record<string, string> = {};
  if (input.contentType && payload !== undefined) headers['content-type'] = input.contentType;
  if (input.credentials === 'signed-gzip' && payload !== undefined) {
    payload = gzipSync(payload);
    headers['content-encoding'] = 'gzip';
  }
  const nowMs = target.clock.nowMs();
  const tokens: Record<string, () => Record<string, string>> = {
    none: () => ({}),
    root: () => bearer(TOKENS.root),
    reader: () => bearer(TOKENS.reader),
    writer: () => bearer(TOKENS.writer),
    admin: () => bearer(TOKENS.admin),
    otherTeam: () => bearer(TOKENS.otherTeam),
    'basic-writer': () => basic(TOKENS.writer),
    wrong: () => bearer('not-a-token-that-anyone-has'),
    'secret-as-token': () => bearer(CLUSTER_SECRET),
    garbage: () => ({ authorization: 'Basic %%%' }),
    signed: () => peerHeaders(payload ?? '', { path: url, nowMs, method }),
    'signed-gzip': () => peerHeaders(payload ?? '', { path: url, nowMs, method }),
    'signed-wrong': () => peerHeaders(payload ?? '', { path: url, nowMs, method, secret: 'w'.repeat(40) }),
  };
  Object.assign(headers, tokens[input.credentials]!());
  return { method: method as InjectOptions['method'], url, headers, ...(payload === undefined ? {} : { payload }) };
}

/**
 * Runs `numRuns` random requests against `target`; throws (with fast-check's shrunk
 * counterexample and seed) when one answers 5xx or a refused one changed the store.
 */
export async function fuzzRoutes(target: FuzzTarget, numRuns: number, seed?: number): Promise<{ statuses: Map<number, number> }> {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fuzzCase(target.routes), async (input) => {
      const request = requestOf(target, input);
      const revision = target.node.store.revision;
      const response = await target.app.inject(request);
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      if (response.statusCode >= 500) throw new Error(`${request.method} ${request.url} answered ${response.statusCode}: ${response.body}`);
      if (response.statusCode >= 400 && target.node.store.revision !== revision) {
        throw new Error(`${request.method} ${request.url} was refused (${response.statusCode}) but changed the store`);
      }
    }),
    // A request that never answers fails its case (with the counterexample) instead of hanging.
    { numRuns, timeout: 10_000, ...(seed === undefined ? {} : { seed }) },
  );
  return { statuses };
}
