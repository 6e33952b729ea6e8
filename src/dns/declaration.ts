import { isIP } from 'node:net';
import type { ListenerDeclaration } from '../adapters/declaration.js';
import { ProtocolConfigError, readInteger, readListener, type ListenerConfig } from '../config/listener-settings.js';

/**
 * The DNS adapter's declaration (src/adapters/declaration.ts): its `dns` section of the file
 * and its flag, its reference rows, its row in the protocols view, its metrics, and its
 * listener (listener.ts), loaded only when `dns.port` is set. DNS carries no credentials: its
 * access control is the source list `dns.allowFrom` and the namespaces it serves.
 */

/** The DNS listener's settings (docs/dns.md): what it answers, for how long, and to whom. */
export interface DnsConfig extends ListenerConfig {
  /**
   * The zone the peer answers for, lower-case, ending with a dot (default `registry.`). Names
   * outside it answer REFUSED: the peer is no recursive resolver.
   */
  domain: string;
  /**
   * TTL of every record and of negative answers (the SOA's minimum), in seconds. Short (5 s)
   * because the registry changes fast: a resolver then holds a cancelled instance at most this
   * long; longer TTLs save queries at the cost of staler answers.
   */
  ttlSeconds: number;
  /**
   * Source networks (CIDR) allowed to query: DNS carries no credentials, so this and
   * `namespaces` are its access control. Default loopback only (127.0.0.0/8, ::1/128).
   */
  allowFrom: string[];
  /**
   * Largest UDP answer sent to a client that announces a larger EDNS0 buffer (512 to 65535
   * bytes, default 1232, the DNS flag day 2020 size that avoids IP fragmentation). Bigger
   * answers are truncated (TC) and the resolver retries over TCP.
   */
  maxUdpPayloadBytes: number;
  /**
   * UDP queries per second one source address may send, a token bucket `udpRateLimitBurst`
   * deep; 0 switches it off. A UDP source can be spoofed and an answer is up to 25 times the
   * query's size, so past it a query is dropped (every other one answered with an empty
   * truncated answer, so a resolver whose address a flood spoofs still gets through over TCP).
   * Loopback sources are not counted (a spoofed loopback source never arrives from the
   * network). Every query, UDP or TCP, also counts against the peer-wide `limits.rateLimit*`.
   * Sized far above what a caching resolver sends: it stops the peer from being an amplifier,
   * not a resolver.
   */
  udpRateLimitPerSecond: number;
  /** UDP queries one source may send at once before `udpRateLimitPerSecond` paces it. */
  udpRateLimitBurst: number;
}

/** The DNS defaults beside port and namespaces. */
export const DNS_DEFAULTS = {
  domain: 'registry.',
  ttlSeconds: 5,
  allowFrom: ['127.0.0.0/8', '::1/128'],
  maxUdpPayloadBytes: 1232,
  udpRateLimitPerSecond: 2_000,
  udpRateLimitBurst: 4_000,
} as const;
/** Most queries per second (and burst) a DNS rate setting takes. */
const DNS_RATE_MAX = 1_000_000;
const DNS_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const MAX_TTL_SECONDS = 86_400;

/** `dns.domain`: one or more DNS labels, compared lower-cased; stored with its trailing dot. */
function readDomain(value: unknown): string {
  if (value === undefined) return DNS_DEFAULTS.domain;
  const domain = typeof value === 'string' ? value.toLowerCase().replace(/\.$/, '') : '';
  if (domain === '' || domain.length > 200 || !domain.split('.').every((label) => DNS_LABEL.test(label))) {
    throw new ProtocolConfigError('dns.domain', `must be a DNS name such as "registry." or "svc.example.com." (got ${JSON.stringify(value)})`);
  }
  return `${domain}.`;
}

/** `dns.allowFrom`: CIDR blocks (`10.0.0.0/8`, `::1/128`) or single addresses (taken as /32 or /128). */
function readNetworks(value: unknown): string[] {
  if (value === undefined) return [...DNS_DEFAULTS.allowFrom];
  const bad = () => new ProtocolConfigError('dns.allowFrom', `must be an array of networks such as ["127.0.0.0/8", "10.0.0.0/8", "::1/128"] (got ${JSON.stringify(value)})`);
  if (!Array.isArray(value)) throw bad();
  return value.map((item: unknown) => {
    if (typeof item !== 'string') throw bad();
    const [address = '', prefix, extra] = item.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : /^\d{1,3}$/.test(prefix) ? Number(prefix) : -1;
    if (family === 0 || extra !== undefined || bits < 0 || bits > (family === 6 ? 128 : 32)) throw bad();
    return `${address}/${bits}`;
  });
}

/** The `dns` section: the common fields plus the DNS ones; two namespaces may not differ only in case (DNS names do not). */
function readDns(doc: unknown, port: number | undefined): DnsConfig {
  const { section, config } = readListener('dns', doc, port, ['domain', 'ttlSeconds', 'allowFrom', 'maxUdpPayloadBytes', 'udpRateLimitPerSecond', 'udpRateLimitBurst']);
  const lowered = new Set(config.namespaces.map((namespace) => namespace.toLowerCase()));
  if (lowered.size !== config.namespaces.length) throw new ProtocolConfigError('dns.namespaces', 'must not hold two namespaces that differ only in case (DNS names are case-insensitive)');
  return {
    ...config,
    domain: readDomain(section.domain),
    ttlSeconds: readInteger('dns.ttlSeconds', section.ttlSeconds, DNS_DEFAULTS.ttlSeconds, 0, MAX_TTL_SECONDS),
    allowFrom: readNetworks(section.allowFrom),
    maxUdpPayloadBytes: readInteger('dns.maxUdpPayloadBytes', section.maxUdpPayloadBytes, DNS_DEFAULTS.maxUdpPayloadBytes, 512, 65_535),
    udpRateLimitPerSecond: readInteger('dns.udpRateLimitPerSecond', section.udpRateLimitPerSecond, DNS_DEFAULTS.udpRateLimitPerSecond, 0, DNS_RATE_MAX),
    udpRateLimitBurst: readInteger('dns.udpRateLimitBurst', section.udpRateLimitBurst, DNS_DEFAULTS.udpRateLimitBurst, 1, DNS_RATE_MAX),
  };
}

export const dnsDeclaration: ListenerDeclaration<'dns', DnsConfig> = {
  name: 'dns',
  label: 'DNS',
  transport: 'UDP and TCP',
  credentials: ['dns-source'],
  settings: { section: 'dns', flag: '--dns-port', env: 'REGISTRY_DNS_PORT', help: 'serve DNS on this UDP and TCP port; off by default' },
  docs: 'docs/dns.md',
  readSettings: readDns,
  reference: {
    intro: 'DNS',
    rows: [
      { field: 'port', type: 'port', default: 'off', doc: 'serve DNS over UDP and TCP on this port (docs/dns.md). Also `--dns-port`.' },
      { field: 'namespaces', type: 'array', default: '`["default"]`', doc: 'the namespaces DNS answers for (DNS carries no credentials; docs/security.md)' },
      { field: 'domain', type: 'name', default: '`registry.`', doc: 'the zone DNS answers for: `<service>.service.<domain>` and the other names of docs/dns.md; names outside it answer REFUSED' },
      { field: 'ttlSeconds', type: 'seconds', default: '5', doc: '0 to 86400: TTL of every record, and of negative answers (the SOA\'s minimum); short because the registry changes fast, longer saves queries but serves staler answers' },
      { field: 'allowFrom', type: 'array', default: '`["127.0.0.0/8", "::1/128"]`', doc: 'source networks (CIDR) that may query; other sources get REFUSED over UDP and a closed connection over TCP (docs/security.md)' },
      { field: 'maxUdpPayloadBytes', type: 'bytes', default: '1232', doc: '512 to 65535: largest UDP answer to a client whose EDNS0 buffer is larger (without EDNS0: 512); a bigger answer is truncated (TC) and the resolver retries over TCP' },
      { field: 'udpRateLimitPerSecond', type: 'count', default: '2000', doc: '0 to 1000000: UDP queries per second one source address may send (a token bucket `dns.udpRateLimitBurst` deep); past it a query is dropped, every other one answered with an empty truncated answer so that a resolver whose address a flood spoofs retries over TCP. A UDP source can be spoofed and an answer is up to 25 times its query, so this keeps the peer from being a traffic amplifier; far above what a caching resolver sends (docs/dns.md). Loopback sources are not counted. Every DNS query, UDP or TCP, also counts against `limits.rateLimitPerSecond` like any request. 0 switches it off' },
      { field: 'udpRateLimitBurst', type: 'count', default: '4000', doc: '1 to 1000000: UDP queries one source may send at once before `dns.udpRateLimitPerSecond` paces it' },
    ],
  },
  listens: (dns) => (dns.port === null ? [] : [{ what: 'the DNS listener', port: dns.port }]),
  metrics: ['registry_dns_queries_total', 'registry_dns_udp_truncated_total'],
  starter: async () => (await import('./listener.js')).startDns,
};
