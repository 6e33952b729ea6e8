import type { FastifyInstance } from 'fastify';
import { serve } from '../http/route-definition.js';
import type { ConsulPeer } from './query.js';
import { CONSUL_ROUTES } from './route-definitions.js';

/** The Consul version the agent routes claim: one whose API the routes here follow. */
export const CLAIMED_CONSUL_VERSION = '1.16.0';

export interface StatusRouteOptions {
  /** This peer's identity and members (what `status/peers` lists). */
  peer: ConsulPeer;
  /** The port this listener serves on (what `status/leader` and `status/peers` name). */
  port: number;
}

/** The host part of a URL as Consul writes addresses (`host:port`, IPv6 in brackets). */
function hostOf(url: string): string {
  return new URL(url).hostname;
}

/**
 * What keeps Consul clients content in a cluster that has no leader. Clients ask these to
 * tell whether the cluster works (Spring Cloud Consul's health indicator reads
 * `status/leader`; consul-template and others read `agent/self` once): an empty leader means
 * "no cluster leader" to them, and they stop. Every peer is equal here and answers from its
 * own replica, so:
 * - `status/leader` answers this peer itself (`"host:port"` of this listener): the peer a
 *   client talks to is the one that serves its reads and writes;
 * - `status/peers` answers every peer that membership sees up or suspect, at its host and
 *   this listener's port (the peers of one cluster are expected to use the same Consul port);
 * - `agent/self` answers a minimal `Config` (datacenter = this peer's region, node name = its
 *   id, `Server: true`, a Consul version whose API this follows) and `Member`.
 */
export async function statusRoutes(app: FastifyInstance, options: StatusRouteOptions): Promise<void> {
  const { peer, port } = options;
  const self = peer.config.self;
  const address = (host: string) => (host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`);
  const json = (value: unknown) => JSON.stringify(value);

  serve(app, CONSUL_ROUTES.statusLeader, async (_request, reply) => {
    return reply.type('application/json; charset=utf-8').send(json(address(hostOf(self.url))));
  });

  serve(app, CONSUL_ROUTES.statusPeers, async (_request, reply) => {
    const hosts = [hostOf(self.url), ...peer.membership.list().filter((member) => member.state !== 'down').map((member) => hostOf(member.descriptor.url))];
    return reply.type('application/json; charset=utf-8').send(json([...new Set(hosts.map(address))]));
  });

  serve(app, CONSUL_ROUTES.agentSelf, async (_request, reply) => {
    const host = hostOf(self.url);
    return reply.type('application/json; charset=utf-8').send(
      json({
        Config: {
          Datacenter: self.region,
          PrimaryDatacenter: self.region,
          NodeName: self.id,
          NodeID: '',
          Server: true,
          Revision: 'registry',
          Version: CLAIMED_CONSUL_VERSION,
        },
        Member: { Name: self.id, Addr: host, Port: port, Tags: { dc: self.region, role: 'consul', zone: self.zone }, Status: 1 },
        Meta: {},
        Stats: {},
      }),
    );
  });
}
