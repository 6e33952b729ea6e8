import { status } from '@grpc/grpc-js';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { XdsServer } from '../../../src/xds/server.js';
import { createTestNode } from '../../support/node.js';
import { securedFile, TOKENS } from '../../support/security.js';
import { FakeAdsCall } from '../../support/xds.js';
import type { Credential, Outcome, ParityAdapter } from './matrix.js';

/**
 * The protocol listeners without HTTP route definitions declare their operations here, each a
 * `ParityAdapter` (matrix.ts): how to start a peer with securedFile's tokens and the listener
 * on, and per operation its need and a call that presents a credential the protocol's way and
 * reads the answer as an Outcome. The matrix itself comes with the contract.
 *
 * - xDS: an ADS stream (state of the world and incremental) with gRPC metadata
 *   `authorization: Bearer <token>` (need `read`: it serves a namespace's addresses);
 *   UNAUTHENTICATED is `unauthenticated`, PERMISSION_DENIED `forbidden`.
 * - DNS: a query from an address in / out of the source list (`dns-source`: no token), read
 *   as REFUSED or answered; its rows use the credential column as the source.
 * null: not declared yet (the test lists it as to do).
 */
export const xdsParity: ParityAdapter<XdsParityPeer> | null = {
  name: 'xds',
  async start() {
    const { node } = await createTestNode({ file: securedFile() });
    node.registry.register(parseRegistration({ service: 'greeter', host: '10.0.0.1', port: 1, leaseDurationMs: 60_000 }, 'team-a', node.config.limits, node.config.cluster));
    const server = new XdsServer(
      { views: node.views, clock: node.components.clock, logger: node.ports.logger, protos: new XdsProtos(), ports: node.ports },
      { host: '127.0.0.1', port: 0, namespaces: ['team-a', 'team-b'], lbPolicy: 'auto', pushCoalesceMs: 50 },
    );
    return { node, server };
  },
  stop: ({ server }) => server.close(),
  operations: [
    {
      name: 'xDS ADS stream (state of the world), Cluster greeter.team-a',
      need: 'read',
      call: ({ server }, credential) =>
        xdsOutcome(credential, (call) => server.attach(call as never), { type_url: TYPE_URLS.cluster, resource_names: ['greeter.team-a'] }),
    },
    {
      name: 'xDS ADS stream (incremental), ClusterLoadAssignment greeter.team-a',
      need: 'read',
      call: ({ server }, credential) =>
        xdsOutcome(credential, (call) => server.attachDelta(call as never), { type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter.team-a'] }),
    },
  ],
};

interface XdsParityPeer {
  node: RegistryNode;
  server: XdsServer;
}

/** Opens a stream (no socket) presenting `credential` the xDS way (gRPC metadata), sends `request`, and reads the answer. */
async function xdsOutcome(credential: Credential, attach: (call: FakeAdsCall<object, unknown>) => void, request: object): Promise<Outcome> {
  const token = credential === 'none' ? undefined : { read: TOKENS.reader, 'other-namespace': TOKENS.otherTeam, write: TOKENS.writer }[credential];
  const call = new FakeAdsCall<object, unknown>('10.0.0.7:5000', token);
  const errors: { code: number }[] = [];
  call.on('error', (error: { code: number }) => errors.push(error));
  attach(call);
  call.send(request);
  call.emit('cancelled');
  if (errors[0]?.code === status.UNAUTHENTICATED) return 'unauthenticated';
  if (errors[0]?.code === status.PERMISSION_DENIED) return 'forbidden';
  if (errors.length > 0 || call.responses.length === 0) throw new Error(`xDS answered neither a response nor an access refusal: ${JSON.stringify(errors)}`);
  return 'served';
}
export const dnsParity: ParityAdapter<unknown> | null = null;
