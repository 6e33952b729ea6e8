import { connect } from 'node:net';
import { status } from '@grpc/grpc-js';
import dnsPacket, { type Packet } from 'dns-packet';
import type { CredentialCarrier } from '../../../src/adapters/contract.js';
import { startDns } from '../../../src/dns/listener.js';
import type { ProtocolListener } from '../../../src/protocol-listeners.js';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { XdsServer } from '../../../src/xds/server.js';
import { createTestNode } from '../../support/node.js';
import { securedFile } from '../../support/security.js';
import { FakeAdsCall } from '../../support/xds.js';
import { TOKEN_OF, type Credential, type Outcome, type ParityAdapter } from './matrix.js';

/**
 * The protocol listeners without HTTP route definitions declare their operations here, each a
 * `ParityAdapter` (matrix.ts): how to start a peer with securedFile's tokens and the listener
 * on, and per operation its need and a call that presents a credential the protocol's way and
 * reads the answer as an Outcome. The matrix itself comes with the contract.
 *
 * - xDS: an ADS stream (state of the world and incremental) with gRPC metadata
 *   `authorization: Bearer <token>` (need `read`: it serves a namespace's addresses);
 *   UNAUTHENTICATED is `unauthenticated`, PERMISSION_DENIED `forbidden`.
 * - DNS: no token (`dns-source`): the credential is the source address, and what a source may
 *   read is `dns.namespaces`. Over TCP on 127.0.0.1 (a real loopback socket: the source is
 *   the socket's address): `none` is a source outside `dns.allowFrom` (127.0.0.2), closed
 *   without an answer (`unauthenticated`); `read` and `write` are an allowed source reading
 *   a served namespace (answered with its records: `served`); `other-namespace` is an allowed
 *   source asking for a namespace DNS does not serve, where the service is registered too:
 *   DNS words "not you" as NXDOMAIN (a namespace it does not serve does not exist to it),
 *   read as `forbidden`.
 */
const xdsAdapter: ParityAdapter<XdsParityPeer> = {
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
  const token = credential === 'none' ? undefined : TOKEN_OF[credential];
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
/** xDS's matrix: its one carrier is gRPC metadata (src/xds/declaration.ts). */
export function xdsParity(carrier: CredentialCarrier): ParityAdapter<XdsParityPeer>[] {
  if (carrier !== 'grpc-authorization') throw new Error(`xDS declares ${carrier}, which its parity declaration cannot present`);
  return [xdsAdapter];
}

interface DnsParityPeer {
  node: RegistryNode;
  listener: ProtocolListener & { port: number };
}

/** The source each credential queries from: outside `dns.allowFrom` for none, inside for the others. */
const DNS_SOURCE: Record<Credential, string> = { none: '127.0.0.2', read: '127.0.0.1', 'other-namespace': '127.0.0.1', write: '127.0.0.1' };
/** The namespace each credential asks for: team-a (served) but for other-namespace's team-b (registered, not served). */
const DNS_NAMESPACE: Record<Credential, string> = { none: 'team-a', read: 'team-a', 'other-namespace': 'team-b', write: 'team-a' };
/** Bound on one query's wait (the listener answers or closes at once; a loaded machine may take a while). */
const DNS_WAIT_MS = 10_000;

const dnsAdapter: ParityAdapter<DnsParityPeer> = {
  name: 'DNS (source list)',
  async start() {
    const { node } = await createTestNode({ file: { ...securedFile(), dns: { port: 0, namespaces: ['team-a'], allowFrom: ['127.0.0.1/32'] } } });
    for (const namespace of ['team-a', 'team-b']) {
      node.registry.register(parseRegistration({ service: 'greeter', host: '10.0.0.1', port: 1, leaseDurationMs: 60_000 }, namespace, node.config.limits, node.config.cluster));
    }
    const listener = await startDns({ node, config: node.config, logger: node.ports.logger, ports: node.ports });
    if (!listener) throw new Error('the DNS listener did not start');
    return { node, listener };
  },
  stop: ({ listener }) => listener.close(),
  operations: (['A', 'SRV'] as const).map((type) => ({
    name: `DNS ${type} greeter.service.<namespace>.registry. over TCP`,
    need: 'read' as const,
    call: async ({ listener }, credential) => {
      const answer = await dnsOverTcp(listener.port, DNS_SOURCE[credential], { type, name: `greeter.service.${DNS_NAMESPACE[credential]}.registry.` });
      if (answer === null) return 'unauthenticated';
      if (answer.rcode === 'NXDOMAIN') return 'forbidden';
      if (answer.rcode === 'NOERROR' && (answer.answers?.length ?? 0) > 0) return 'served';
      throw new Error(`DNS answered ${answer.rcode} with ${answer.answers?.length ?? 0} records: neither served nor refused`);
    },
  })),
};

/** One query over TCP from `localAddress`: the decoded answer, or null when the listener closed the connection without one. */
function dnsOverTcp(port: number, localAddress: string, question: { type: 'A' | 'SRV'; name: string }): Promise<(Packet & { rcode?: string }) | null> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`DNS over TCP: neither an answer nor a close within ${DNS_WAIT_MS} ms`));
    }, DNS_WAIT_MS);
    socket.on('connect', () => socket.write(dnsPacket.streamEncode({ type: 'query', id: 7, flags: dnsPacket.RECURSION_DESIRED, questions: [question] })));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(dnsPacket.streamDecode(received) as Packet & { rcode?: string });
    });
    // A refused source is closed (or reset) before any answer.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(null);
    });
  });
}

/** DNS's matrix: its one carrier is the source list (src/dns/declaration.ts). */
export function dnsParity(carrier: CredentialCarrier): ParityAdapter<DnsParityPeer>[] {
  if (carrier !== 'dns-source') throw new Error(`DNS declares ${carrier}, which its parity declaration cannot present`);
  return [dnsAdapter];
}
