import type { InjectOptions } from 'fastify';
import { CONSUL_ROUTE_LIST } from '../../../src/consul/route-definitions.js';
import { scopeOf } from '../../../src/http/access-policy.js';
import { HTTP_ROUTES } from '../../../src/http/route-catalogue.js';
import type { AccessClass, RouteDefinition } from '../../../src/http/route-definition.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { createTestServer, type TestServer } from '../../support/server.js';
import { basic, bearer, securedFile } from '../../support/security.js';
import type { CredentialCarrier } from '../../../src/adapters/contract.js';
import { outcomeOfStatus, TOKEN_OF, type Credential, type Need, type Outcome, type ParityAdapter, type ParityOperation } from './matrix.js';

/**
 * The HTTP protocols' declarations for the parity matrix, generated from the route
 * definitions they already declare (method, path, access class): a route added to a catalogue
 * is in the matrix without a line here.
 */


/** The need of an access class (the scope it takes); undefined for peer routes (peer authentication is not a client credential). */
export function needOf(access: AccessClass): Need | undefined {
  return access === 'public' ? 'public' : scopeOf(access);
}

/** A concrete path for a route pattern: every parameter given a plain value. */
function pathOf(url: string, values: Record<string, string>): string {
  return url.replace(/:(\w+)/g, (_match, name: string) => values[name] ?? 'x').replace(/\*$/, 'x');
}


/** The operations of a list of route definitions, called with `inject` as `present` carries a credential. */
function routeOperations<P>(
  definitions: readonly RouteDefinition[],
  options: {
    app: (peer: P) => { inject(request: InjectOptions): Promise<{ statusCode: number; body: string }> };
    params: Record<string, string>;
    query: (definition: RouteDefinition) => string;
    present: (credential: Credential) => { headers?: Record<string, string>; query?: string };
    outcome?: (status: number, body: string) => Outcome;
  },
): ParityOperation<P>[] {
  const operations: ParityOperation<P>[] = [];
  for (const definition of definitions) {
    const need = needOf(definition.access);
    if (need === undefined) continue;
    operations.push({
      name: `${definition.method} ${definition.url}`,
      need,
      call: async (peer, credential) => {
        const presented = options.present(credential);
        const query = [options.query(definition), presented.query].filter(Boolean).join('&');
        const url = pathOf(definition.url, options.params) + (query ? `?${query}` : '');
        const withBody = definition.method === 'POST' || definition.method === 'PUT';
        const answer = await options.app(peer).inject({
          method: definition.method,
          url,
          headers: { ...presented.headers, ...(withBody ? { 'content-type': 'application/json' } : {}) },
          ...(withBody ? { payload: '{}' } : {}),
          remoteAddress: '10.0.0.1',
        });
        return (options.outcome ?? outcomeOfStatus)(answer.statusCode, answer.body);
      },
    });
  }
  return operations;
}

/** A peer with the secured tokens and its HTTP app; watch streams end at once (the hub is closed), so no call hangs. */
async function startHttpPeer(): Promise<TestServer> {
  const server = await createTestServer({ file: securedFile({ security: { eurekaNamespace: 'team-a' } }) });
  server.node.watch.closeAll();
  return server;
}

const HTTP_PARAMS = { service: 'orders', id: 'i-1', app: 'ORDERS', vip: 'orders', svip: 'orders', file: 'app.js' };
const bearerOf = (credential: Credential) => (credential === 'none' ? {} : { headers: bearer(TOKEN_OF[credential]) });

/** The HTTP app's routes of one adapter (by path), as operations. */
function httpAdapter(name: string, owns: (url: string) => boolean, present = bearerOf): ParityAdapter<TestServer> {
  return {
    name,
    start: startHttpPeer,
    stop: async (server) => server.app.close(),
    operations: routeOperations<TestServer>(
      HTTP_ROUTES.filter((definition) => owns(definition.url)),
      {
        app: (server) => server.app,
        params: HTTP_PARAMS,
        // The native routes name their namespace; Eureka's is security.eurekaNamespace.
        query: (definition) => (definition.access === 'read' || definition.access === 'write' ? 'namespace=team-a' : ''),
        present,
      },
    ),
  };
}

const isEureka = (url: string) => url.startsWith('/eureka/');
const isPrometheus = (url: string) => url.startsWith('/v1/sd/prometheus');
const isNative = (url: string) => url.startsWith('/v1/') && !isPrometheus(url) && !url.startsWith('/v1/peer') && !url.startsWith('/v1/admin') && url !== '/v1/cluster';

export const nativeParity = httpAdapter('native /v1', isNative);
export const eurekaParity = httpAdapter('Eureka (bearer)', isEureka);
/** Eureka clients send the token as HTTP basic's password (Spring Cloud's `http://user:token@host/eureka/`). */
export const eurekaBasicParity = httpAdapter('Eureka (HTTP basic)', isEureka, (credential) =>
  credential === 'none' ? {} : { headers: basic(TOKEN_OF[credential]) },
);
export const prometheusParity = httpAdapter('Prometheus SD', isPrometheus);
/** The operator routes (cluster view, eviction guards, metrics) and the open ones (probes, docs, dashboard). */
export const opsParity = httpAdapter('operations (admin and public routes)', (url) => !isEureka(url) && !isNative(url) && !isPrometheus(url) && !url.startsWith('/v1/peer'));

/**
 * Consul words the contract's answers its own way: no 401 (its clients take 403 as the ACL
 * answer), `ACL not found` for an unknown token and `Permission denied: ... needs a token` for
 * none; `Permission denied` for a scope or namespace.
 */
function consulOutcome(status: number, body: string): Outcome {
  if (status >= 500) return outcomeOfStatus(status, body);
  if (status === 401 || (status === 403 && /^ACL not found|needs a token/.test(body))) return 'unauthenticated';
  return status === 403 ? 'forbidden' : 'served';
}

function consulAdapter(name: string, present: (credential: Credential) => { headers?: Record<string, string>; query?: string }): ParityAdapter<TestConsul> {
  return {
    name,
    // The GET forms of the writes answer 405 unless consul.allowGetWrites (test/unit/consul/agent-routes.test.ts); on, they take the write need like the PUTs.
    start: () => createTestConsul({ file: { ...securedFile(), consul: { namespaces: ['team-a', 'team-b'], allowGetWrites: true } } }),
    stop: async (consul) => consul.close(),
    operations: routeOperations<TestConsul>(CONSUL_ROUTE_LIST, {
      app: (consul) => consul.app,
      params: { id: 'web-1', check_id: 'service:web-1', name: 'web' },
      query: () => '',
      present,
      outcome: consulOutcome,
    }),
  };
}

/**
 * How an HTTP request presents a token the way a carrier says (src/adapters/contract.ts), for
 * the adapters whose matrix is generated per declared carrier; undefined for a carrier HTTP
 * does not have.
 */
export function presentOverHttp(carrier: CredentialCarrier): ((credential: Credential) => { headers?: Record<string, string>; query?: string }) | undefined {
  const by: Partial<Record<CredentialCarrier, (token: string) => { headers?: Record<string, string>; query?: string }>> = {
    bearer: (token) => ({ headers: bearer(token) }),
    basic: (token) => ({ headers: basic(token) }),
    'x-consul-token': (token) => ({ headers: { 'x-consul-token': token } }),
    'query-token': (token) => ({ query: `token=${encodeURIComponent(token)}` }),
    'nacos-access-token': (token) => ({ query: `accessToken=${encodeURIComponent(token)}` }),
  };
  const present = by[carrier];
  return present && ((credential) => (credential === 'none' ? {} : present(TOKEN_OF[credential])));
}

/** Consul's matrix, one per carrier its declaration lists (src/consul/declaration.ts). */
export function consulParity(carrier: CredentialCarrier): ParityAdapter<TestConsul>[] {
  const present = presentOverHttp(carrier);
  if (!present) throw new Error(`Consul declares ${carrier}, which the parity matrix cannot present over HTTP`);
  return [consulAdapter(`Consul (${carrier})`, present)];
}
