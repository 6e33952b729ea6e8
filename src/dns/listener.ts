import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { BlockList, createServer, isIP, type Server, type Socket } from 'node:net';
import dnsPacket, { type DecodedPacket } from 'dns-packet';
import type { Clock } from '../clock/clock.js';
import type { DnsConfig } from './declaration.js';
import type { Logger } from '../log/logger.js';
import type { ListenerDeps, ProtocolListener } from '../protocol-listeners.js';
import { DnsLimits } from './limits.js';
import { DnsResponder, refusal, truncation } from './responder.js';
import { DNS_TCP_LIMITS, DnsTcpConnection } from './tcp.js';
import { CONNECTIONS_POOL_LABEL, DnsMetrics } from './metrics.js';
import { metricsPortOf } from '../adapters/metrics.js';
import type { HeldPoolRecorder } from '../metrics/adapter-metrics.js';

/**
 * The DNS listener (docs/dns.md): UDP and TCP on the same port of the peer's host, off unless
 * `dns.port` is set. Sources outside `dns.allowFrom` get REFUSED over UDP (an answer no bigger
 * than the query, so no amplification) and a closed connection over TCP; allowed sources are
 * held to a query rate and a share of the TCP connections (limits.ts).
 */

/** Source addresses whose verdict is remembered; the memo is emptied when it grows past this. */
const MAX_VERDICTS = 4_096;
/** Tries to find a port free for both UDP and TCP when the configured port is 0 (any). */
const ANY_PORT_TRIES = 5;

/** Which sources may query: the `dns.allowFrom` networks. */
export function sourceFilter(networks: readonly string[]): (address: string) => boolean {
  const allowed = new BlockList();
  for (const network of networks) {
    const [address = '', prefix = ''] = network.split('/');
    allowed.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  // BlockList.check costs microseconds, more than answering from the encoded view: the
  // verdicts of the sources seen are kept (resolvers and load balancers are few).
  const verdicts = new Map<string, boolean>();
  return (address) => {
    const known = verdicts.get(address);
    if (known !== undefined) return known;
    // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d.
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    const family = isIP(plain);
    const verdict = family !== 0 && allowed.check(plain, family === 6 ? 'ipv6' : 'ipv4');
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdicts.set(address, verdict);
    return verdict;
  };
}

class DnsListener implements ProtocolListener {
  readonly name = 'dns';
  private readonly connections = new Set<Socket>();

  constructor(
    private readonly udp: UdpSocket,
    private readonly tcp: Server,
    private readonly responder: DnsResponder,
    readonly port: number,
  ) {}

  async close(): Promise<void> {
    for (const connection of this.connections) connection.destroy();
    await Promise.all([new Promise<void>((resolve) => this.udp.close(() => resolve())), new Promise<void>((resolve) => this.tcp.close(() => resolve()))]);
  }

  track(connection: Socket): void {
    this.connections.add(connection);
    connection.on('close', () => this.connections.delete(connection));
  }
}

function onUdpMessage(udp: UdpSocket, responder: DnsResponder, allowed: (address: string) => boolean, limits: DnsLimits, metrics: DnsMetrics, log: Logger) {
  let slip = false;
  return (message: Buffer, from: RemoteInfo) => {
    const startedMs = metrics.start('udp');
    try {
      let reply: Buffer[] | null | undefined;
      // Every source counts, allowed or not: a refusal too is traffic aimed at whoever a flood spoofs.
      if (limits.udpQuery(from.address)) {
        reply = allowed(from.address) ? responder.answer(message, 'udp')?.parts : refusal(message);
        metrics.answered('udp', message, reply ?? null, startedMs);
      } else {
        // Past its rate: dropped, for the source may be spoofed (any answer is traffic aimed at
        // a victim); every other one gets an empty truncated answer, so that a real resolver
        // whose address a flood spoofs retries over TCP, which cannot be spoofed (BIND's RRL slip).
        slip = !slip;
        reply = slip ? truncation(message) : null;
        metrics.answered('udp', message, reply, startedMs, 'limited');
        log.warn({ from: from.address }, 'dns udp source past its rate: queries dropped');
      }
      if (reply) udp.send(reply, from.port, from.address);
    } catch (error) {
      // Nothing a client sends may stop the listener; a bug here costs one answer, not the peer.
      metrics.answered('udp', message, null, startedMs, 'error');
      log.warn({ err: error, from: from.address }, 'dns query failed');
    }
  };
}

/**
 * One TCP connection (tcp.ts frames, paces and times it): a source outside `dns.allowFrom`, or
 * past the peer's cap or its share of the connections, is closed at once. Queries are decoded
 * with dns-packet's streamDecode; answers are encoded once per view, so they get their two
 * length bytes in tcp.ts rather than from streamEncode (which encodes a packet).
 */
function onTcpConnection(
  listener: DnsListener,
  responder: DnsResponder,
  allowed: (address: string) => boolean,
  limits: DnsLimits,
  clock: Clock,
  metrics: { dns: DnsMetrics; connections: HeldPoolRecorder },
  log: Logger,
) {
  return (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    if (!allowed(address)) {
      socket.destroy();
      return;
    }
    const slot = limits.connection(address);
    if (!slot.held) {
      metrics.connections.refused(slot.cap);
      log.warn({ from: address, cap: slot.cap }, `dns tcp connection refused: ${slot.message}`);
      socket.destroy();
      return;
    }
    listener.track(socket);
    socket.on('close', () => slot.release());
    const answer = (message: Buffer, framed: Buffer): Buffer[] | null => {
      const startedMs = metrics.dns.start('tcp');
      // Past its rate a source is told REFUSED: a TCP source is no spoofed one (no reflection).
      if (!limits.tcpQuery(address)) {
        log.warn({ from: address }, 'dns tcp source past its rate: queries refused');
        const refused = refusal(message);
        metrics.dns.answered('tcp', message, refused, startedMs, 'limited');
        return refused;
      }
      const parts = responder.answer(message, 'tcp', () => dnsPacket.streamDecode(framed) as DecodedPacket)?.parts ?? null;
      metrics.dns.answered('tcp', message, parts, startedMs);
      return parts;
    };
    new DnsTcpConnection(socket, answer, clock, DNS_TCP_LIMITS, (error) => log.warn({ err: error, from: address }, 'dns query failed'));
  };
}

function bindUdp(socket: UdpSocket, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    socket.once('error', failed);
    socket.bind(port, host, () => {
      socket.off('error', failed);
      resolve(socket.address().port);
    });
  });
}

function listenTcp(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/** Binds UDP then TCP on the same port; with port 0, a port free for both (a few tries). */
async function bind(host: string, port: number): Promise<{ udp: UdpSocket; tcp: Server; port: number }> {
  const type = isIP(host) === 6 ? 'udp6' : 'udp4';
  for (let attempt = 1; ; attempt++) {
    const udp = createSocket({ type });
    const tcp = createServer();
    try {
      const bound = await bindUdp(udp, port, host);
      await listenTcp(tcp, bound, host);
      return { udp, tcp, port: bound };
    } catch (error) {
      udp.close();
      tcp.close();
      if (port !== 0 || attempt >= ANY_PORT_TRIES || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
}

/** Starts the DNS listener when `dns.port` is set (the starter in protocol-listeners.ts). */
export async function startDns({ node, config, ports }: ListenerDeps): Promise<(ProtocolListener & { port: number }) | null> {
  const dns: DnsConfig = config.protocols.dns;
  if (dns.port === null) return null;
  // The contract's logger: redacted, and sampled (a flood makes a few lines a second, not one per query).
  const log = ports.logger.child({ component: 'dns' });
  const { udp, tcp, port } = await bind(config.host, dns.port);
  // Query zones are lower-case (DNS names are case-insensitive); the peers' zones keep theirs,
  // so the reads port's regionOfZone (exact case) does not do here.
  const regionOfZone = (zone: string): string | undefined =>
    config.self.zone.toLowerCase() === zone ? config.self.region : node.membership.list().find((member) => member.descriptor.zone.toLowerCase() === zone)?.descriptor.region;
  const responder = new DnsResponder({ views: ports.reads.views, regionOfZone }, dns);
  const listener = new DnsListener(udp, tcp, responder, port);
  const allowed = sourceFilter(dns.allowFrom);
  const clock = node.components.clock;
  const limits = new DnsLimits(clock, dns, ports.limits);
  // The metrics port: queries by transport, type and rcode, UDP truncations, TCP connections as the held pool (metrics.ts).
  const metrics = new DnsMetrics(metricsPortOf(ports));
  const connections = metrics.recorders.pool(CONNECTIONS_POOL_LABEL, limits.connections);
  udp.on('message', onUdpMessage(udp, responder, allowed, limits, metrics, log));
  udp.on('error', (error) => log.warn({ err: error }, 'dns udp socket error'));
  tcp.on('connection', onTcpConnection(listener, responder, allowed, limits, clock, { dns: metrics, connections }, log));
  tcp.on('error', (error) => log.warn({ err: error }, 'dns tcp server error'));
  log.info({ host: config.host, port, domain: dns.domain, namespaces: dns.namespaces, allowFrom: dns.allowFrom, udpRateLimitPerSecond: dns.udpRateLimitPerSecond }, 'dns listening');
  return listener;
}
