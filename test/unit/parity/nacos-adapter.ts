import type { GrpcConnections } from '../../../src/nacos/grpc/connections.js';
import { messageOf, payloadOf } from '../../../src/nacos/grpc/protocol.js';
import { createTestNacos, form, testGrpcConnections, type TestNacos } from '../../support/nacos.js';
import { bearer, securedFile } from '../../support/security.js';
import type { CredentialCarrier } from '../../../src/adapters/contract.js';
import { outcomeOfStatus, TOKEN_OF, type Need, type ParityAdapter, type ParityOperation } from './matrix.js';

/**
 * The Nacos adapter in the parity matrix (matrix.ts): its v1 routes over HTTP, the token sent
 * as `?accessToken=` (after a login) or as the `password` form field (npm `nacos` 1.x), and its
 * v2 gRPC requests with the token in the request's `headers.accessToken` (the Rust and Java
 * SDKs). Every call names namespace team-a (the read and write tokens' own). Not in the
 * matrix: the login (`POST /nacos/v1/auth/login`), which takes the token as its password and
 * checks no namespace (its own test: test/unit/nacos/routes.test.ts).
 */

/** A peer with the secured tokens, its Nacos app serving team-a and team-b, and a gRPC connection table. */
interface NacosPeer {
  t: TestNacos;
  grpc: GrpcConnections;
}

async function startNacosPeer(): Promise<NacosPeer> {
  const t = await createTestNacos({ file: { ...securedFile(), nacos: { namespaces: ['team-a', 'team-b'] } } });
  const grpc = testGrpcConnections(t, { perConnectionMax: 16 });
  return { t, grpc };
}

async function stopNacosPeer(peer: NacosPeer): Promise<void> {
  peer.grpc.close();
  await peer.t.close();
}

const INSTANCE = { namespaceId: 'team-a', serviceName: 'DEFAULT_GROUP@@web', ip: '10.0.0.1', port: '8080' };

/** The v1 routes: method, path, need, and the fields each is called with. */
const HTTP_OPERATIONS: ReadonlyArray<{ method: 'GET' | 'POST' | 'PUT' | 'DELETE'; path: string; need: Need; fields: Record<string, string> }> = [
  { method: 'POST', path: '/nacos/v1/ns/instance', need: 'write', fields: INSTANCE },
  { method: 'PUT', path: '/nacos/v1/ns/instance', need: 'write', fields: INSTANCE },
  { method: 'PUT', path: '/nacos/v1/ns/instance/beat', need: 'write', fields: INSTANCE },
  { method: 'DELETE', path: '/nacos/v1/ns/instance', need: 'write', fields: INSTANCE },
  { method: 'GET', path: '/nacos/v1/ns/instance', need: 'read', fields: INSTANCE },
  { method: 'GET', path: '/nacos/v1/ns/instance/list', need: 'read', fields: { namespaceId: 'team-a', serviceName: 'DEFAULT_GROUP@@web' } },
  { method: 'GET', path: '/nacos/v1/ns/service/list', need: 'read', fields: { namespaceId: 'team-a', pageNo: '1', pageSize: '10' } },
  { method: 'GET', path: '/nacos/v1/ns/operator/metrics', need: 'public', fields: {} },
];

function httpOperations(present: 'accessToken' | 'password' | 'bearer'): ParityOperation<NacosPeer>[] {
  return HTTP_OPERATIONS.map(({ method, path, need, fields }) => ({
    name: `${method} ${path}`,
    need,
    call: async (peer, credential) => {
      const token = credential === 'none' ? undefined : TOKEN_OF[credential];
      const inFields: Record<string, string> = token === undefined || present === 'bearer' ? {} : present === 'accessToken' ? { accessToken: token } : { username: 'nacos', password: token };
      const all: Record<string, string> = { ...fields, ...inFields };
      // npm nacos sends a write's fields as a form; reads in the query string.
      const asForm = method !== 'GET' && present === 'password';
      const url = asForm ? path : `${path}?${new URLSearchParams(all).toString()}`;
      const headers = token !== undefined && present === 'bearer' ? bearer(token) : {};
      const answer = await peer.t.app.inject({ method, url, ...(asForm ? form(all) : {}), headers: { ...(asForm ? form(all).headers : {}), ...headers }, remoteAddress: '10.0.0.1' });
      return outcomeOfStatus(answer.statusCode, answer.body);
    },
  }));
}

const GRPC_INSTANCE = { ip: '10.0.0.2', port: 9090, weight: 1, healthy: true, enabled: true, ephemeral: true, clusterName: 'DEFAULT', metadata: {} };

/** The v2 request types: need and body (namespace team-a). */
const GRPC_OPERATIONS: ReadonlyArray<{ type: string; need: Need; body: Record<string, unknown> }> = [
  { type: 'ServerCheckRequest', need: 'public', body: {} },
  { type: 'HealthCheckRequest', need: 'public', body: {} },
  { type: 'InstanceRequest', need: 'write', body: { type: 'registerInstance', namespace: 'team-a', serviceName: 'grpc-web', groupName: 'DEFAULT_GROUP', instance: GRPC_INSTANCE } },
  { type: 'BatchInstanceRequest', need: 'write', body: { type: 'batchRegisterInstance', namespace: 'team-a', serviceName: 'grpc-web', groupName: 'DEFAULT_GROUP', instances: [GRPC_INSTANCE] } },
  { type: 'ServiceQueryRequest', need: 'read', body: { namespace: 'team-a', serviceName: 'grpc-web', groupName: 'DEFAULT_GROUP', cluster: '', healthyOnly: false } },
  { type: 'SubscribeServiceRequest', need: 'read', body: { namespace: 'team-a', serviceName: 'grpc-web', groupName: 'DEFAULT_GROUP', clusters: '', subscribe: true } },
  { type: 'ServiceListRequest', need: 'read', body: { namespace: 'team-a', groupName: 'DEFAULT_GROUP', pageNo: 1, pageSize: 10 } },
];

const grpcOperations: ParityOperation<NacosPeer>[] = GRPC_OPERATIONS.map(({ type, need, body }) => ({
  name: `gRPC ${type}`,
  need,
  call: async (peer, credential) => {
    const headers = credential === 'none' ? {} : { accessToken: TOKEN_OF[credential] };
    const answer = messageOf(await peer.grpc.request('10.0.0.1:40000', payloadOf(type, { ...body, headers, requestId: 'parity' })))!;
    const errorCode = answer.body.errorCode;
    return outcomeOfStatus(typeof errorCode === 'number' && errorCode !== 0 ? errorCode : 200, JSON.stringify(answer.body));
  },
}));

const nacosAdapter = (name: string, operations: ParityOperation<NacosPeer>[]): ParityAdapter<NacosPeer> => ({ name, start: startNacosPeer, stop: stopNacosPeer, operations });

/**
 * Nacos's matrix, per carrier its declaration lists (src/nacos/declaration.ts): its own token
 * (`?accessToken=`, the password field of npm nacos 1.x, and the gRPC requests' headers), and
 * `Authorization: Bearer` on its v1 routes.
 */
export function nacosParity(carrier: CredentialCarrier): ParityAdapter<NacosPeer>[] {
  if (carrier === 'nacos-access-token') {
    return [
      nacosAdapter('Nacos v1 (?accessToken=)', httpOperations('accessToken')),
      nacosAdapter('Nacos v1 (password field, npm nacos)', httpOperations('password')),
      nacosAdapter('Nacos v2 gRPC (headers.accessToken)', grpcOperations),
    ];
  }
  if (carrier === 'bearer') return [nacosAdapter('Nacos v1 (Authorization: Bearer)', httpOperations('bearer'))];
  throw new Error(`Nacos declares ${carrier}, which its parity declaration cannot present`);
}
