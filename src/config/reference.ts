import { envNames } from './load.js';
import { profileNames, profiles } from './profiles.js';
import { SECURITY_ENV } from './security.js';
import { clusterSettings, limitSettings, securitySettings, storageSettings, type Setting } from './settings.js';

function unitOf(setting: Setting): string {
  if (setting.kind === 'enum') return 'name';
  return setting.kind === 'ratio' ? 'ratio' : setting.unit;
}

function rangeOf(setting: Setting): string {
  return setting.kind === 'enum' ? setting.values.map((value) => `\`${value}\``).join(', ') : `${setting.min} to ${setting.max}`;
}

function table(prefix: string, settings: Record<string, Setting>): string {
  const lines = ['| setting | unit | default | range | what it does |', '| --- | --- | --- | --- | --- |'];
  for (const [name, setting] of Object.entries(settings)) {
    lines.push(`| \`${prefix}${name}\` | ${unitOf(setting)} | ${setting.default} | ${rangeOf(setting)} | ${setting.doc} |`);
  }
  return lines.join('\n');
}

function profileTable(): string {
  const names = Object.keys(clusterSettings) as (keyof typeof clusterSettings)[];
  const lines = [
    `| setting | ${profileNames.join(' | ')} |`,
    `| --- | ${profileNames.map(() => '---').join(' | ')} |`,
  ];
  for (const name of names) {
    const cells = profileNames.map((profile) => String(profiles[profile].overrides[name] ?? clusterSettings[name].default));
    lines.push(`| \`${name}\` | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The configuration reference, docs/configuration.md, generated from the settings table. */
export function renderConfigReference(): string {
  const flags = Object.entries(envNames)
    .map(([flag, env]) => `| \`--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}\` | \`${env}\` |`)
    .join('\n');
  return `<!-- Generated from src/config/settings.ts by \`npm run docs:config\`; do not edit by hand. -->
# Configuration reference

A peer's configuration comes from four layers; each beats the one after it:

1. command-line flags,
2. environment variables,
3. the JSON file given with \`--config\` (or \`REGISTRY_CONFIG\`),
4. the defaults of the chosen profile.

A bad value stops the process with exit code 2 and a message naming the field, for example
\`registry: bad configuration: cluster.leaseDurationMs: must be an integer from 500 to 86400000 (got "soon")\`.
Unknown fields are refused too, so a typo never passes silently.

## Flags and environment

| flag | environment |
| --- | --- |
${flags}

Secrets are read from the environment (or the file), never from flags, which every user of
the machine can see:

| environment | what it holds |
| --- | --- |
| \`${SECURITY_ENV.tokens}\` | the client tokens, as the JSON array of \`security.tokens\` (replaces the file's list) |
| \`${SECURITY_ENV.clusterSecret}\` | the cluster secret that signs peer calls (beats \`security.clusterSecret\`) |

\`--id\` picks this peer in the file's \`peers\` list; the peer then listens on the host and port of
its \`url\` unless \`--host\`/\`--port\` say otherwise. An id that is not in the list is refused
(exit 2, naming the ids the file has), so that a typo never starts an extra peer on another
peer's port, unless the peer is given an address of its own with \`--port\` or \`--url\` (flag,
environment or the file's top-level \`port\`/\`url\`): it then joins the listed peers as seeds and
advertises \`--url\` (default \`http://HOST:PORT\`). With no file at all the peer is \`peer-1\` on
\`127.0.0.1:8761\`, a cluster of one.

## The file

\`\`\`json
{
  "cluster": { "name": "dev", "profile": "lan", "leaseDurationMs": 30000 },
  "peers": [
    { "id": "peer-a", "url": "http://127.0.0.1:8761", "region": "local", "zone": "a" }
  ],
  "limits": { "bodyMaxBytes": 65536 },
  "logLevel": "info",
  "dataDir": null,
  "storage": { "syncPolicy": "interval", "syncIntervalMs": 200 }
}
\`\`\`

Top-level fields: \`cluster\`, \`peers\` (each \`{id, url, region, zone}\`), \`limits\`,
\`services\` (per-service settings, below), \`security\` and \`tls\` (below), and the
per-peer fields \`id\`, \`host\`, \`port\`, \`url\`, \`region\`, \`zone\`, \`dataDir\`, \`logLevel\`
(the same as the flags) and \`storage\` (below; \`storage.syncPolicy\` is also \`--sync-policy\`).
\`dataDir\` (\`--data-dir\`) makes the peer durable: it keeps a log and snapshots there and
reloads them at start (see docs/durability.md); without it the peer keeps everything in memory. \`cluster.name\` names the cluster; \`cluster.profile\` picks the
profile (\`${profileNames.join('`, `')}\`).

## Cluster settings

These should be the same on every peer of a cluster.

${table('cluster.', clusterSettings)}

## Per-service settings

\`services\` maps a service (\`"orders"\`, in the \`default\` namespace, or \`"team-a/orders"\`) to its
own settings; today one: \`protectThresholdRatio\` (ratio, 0 to 1), which overrides
\`cluster.protectThresholdRatio\` for that service.

\`\`\`json
{ "services": { "orders": { "protectThresholdRatio": 0.5 } } }
\`\`\`

## Limits

What one client may send and hold, and how long it may take (docs/security.md, abuse limits).

${table('limits.', limitSettings)}

## Storage

Per peer, and only used with a data dir. What each sync policy risks is in docs/durability.md.

${table('storage.', storageSettings)}

## Security

Who may call what (docs/security.md has the walk-through). With no token and no peer
authentication a peer runs open, which it only does on a loopback address unless started with
\`--insecure\`.

| field | type | default | what it does |
| --- | --- | --- | --- |
| \`security.tokens\` | array | \`[]\` | client tokens: \`{name, sha256 or token, namespaces, scopes}\`; \`sha256\` is the hex SHA-256 of the token (preferred: the file then holds no secret), \`token\` the token itself (16 to 4,096 characters); \`namespaces\` is \`["*"]\` or a list; \`scopes\` any of \`read\`, \`write\` (implies read), \`admin\`. Also \`${SECURITY_ENV.tokens}\`. None: the client routes are open. |
| \`security.clusterSecret\` | string | none | signs every peer call (HMAC-SHA256) and is required on the peer routes; at least 32 characters (\`openssl rand -hex 32\`), the same on every peer, never equal to a token. Also \`${SECURITY_ENV.clusterSecret}\`. |
| \`security.peerMtls\` | boolean | false | peers present their certificate (\`tls.certFile\`) when they call; a certificate verified against \`tls.caFile\` is accepted on the peer routes (instead of a signature). Needs \`tls.certFile\`, \`tls.keyFile\` and \`tls.caFile\`. |
| \`security.eurekaNamespace\` | string | \`default\` | the namespace the Eureka API serves |
| \`tls.certFile\`, \`tls.keyFile\` | path | none | serve HTTPS with this certificate and key (PEM); the peer's URL is then \`https://\`. Also \`--tls-cert\`, \`--tls-key\`. |
| \`tls.caFile\` | path | none | the CA (PEM) the peers' certificates chain to: trusted for calls to other peers, and, with \`security.peerMtls\`, for their client certificates. Also \`--tls-ca\`. |

${table('security.', securitySettings)}

## Protocol listeners

Beside the HTTP API a peer can serve DNS, gRPC xDS, a Consul-compatible HTTP API and the Nacos naming API, each on a
port of its own, on the peer's host, and each off until its port is set. They serve the same
records as \`/v1\` and the Eureka API.

| field | type | default | what it does |
| --- | --- | --- | --- |
| \`dns.port\` | port | off | serve DNS over UDP and TCP on this port (docs/dns.md). Also \`--dns-port\`. |
| \`dns.namespaces\` | array | \`["default"]\` | the namespaces DNS answers for (DNS carries no credentials; docs/security.md) |
| \`dns.domain\` | name | \`registry.\` | the zone DNS answers for: \`<service>.service.<domain>\` and the other names of docs/dns.md; names outside it answer REFUSED |
| \`dns.ttlSeconds\` | seconds | 5 | 0 to 86400: TTL of every record, and of negative answers (the SOA's minimum); short because the registry changes fast, longer saves queries but serves staler answers |
| \`dns.allowFrom\` | array | \`["127.0.0.0/8", "::1/128"]\` | source networks (CIDR) that may query; other sources get REFUSED over UDP and a closed connection over TCP (docs/security.md) |
| \`dns.maxUdpPayloadBytes\` | bytes | 1232 | 512 to 65535: largest UDP answer to a client whose EDNS0 buffer is larger (without EDNS0: 512); a bigger answer is truncated (TC) and the resolver retries over TCP |
| \`dns.udpRateLimitPerSecond\` | count | 2000 | 0 to 1000000: UDP queries per second one source address may send (a token bucket \`dns.udpRateLimitBurst\` deep); past it a query is dropped, every other one answered with an empty truncated answer so that a resolver whose address a flood spoofs retries over TCP. A UDP source can be spoofed and an answer is up to 25 times its query, so this keeps the peer from being a traffic amplifier; far above what a caching resolver sends (docs/dns.md). Loopback sources are not counted. Every DNS query, UDP or TCP, also counts against \`limits.rateLimitPerSecond\` like any request. 0 switches it off |
| \`dns.udpRateLimitBurst\` | count | 4000 | 1 to 1000000: UDP queries one source may send at once before \`dns.udpRateLimitPerSecond\` paces it |
| \`xds.port\` | port | off | serve the xDS Aggregated Discovery Service (gRPC) on this port (docs/xds.md). Also \`--xds-port\`. |
| \`xds.namespaces\` | array | \`["default"]\` | the namespaces xDS exposes (a service of namespace \`ns\` other than \`default\` is \`xds:///service.ns\`; docs/xds.md) |
| \`xds.lbPolicy\` | string | \`auto\` | the balancing the Cluster asks of gRPC clients: \`auto\` (\`ring_hash\` for every client but gRPC C-core before 1.52, which crashes on it and gets \`round_robin\`; docs/xds.md), or \`ring_hash\` (calls in proportion to each endpoint's weight) or \`round_robin\` (endpoints of a zone take turns; weights only split calls between zones) for every client |
| \`xds.pushCoalesceMs\` | ms | 50 | changes within this window reach each ADS stream as one push; longer means fewer pushes under churn but later news |
| \`xds.allowAnonymous\` | boolean | \`false\` | with client tokens configured, serve \`xds.namespaces\` to ADS streams that present no token (most gRPC xDS clients cannot send one); off: a stream needs a token with the \`read\` scope in its gRPC metadata (\`authorization: Bearer <token>\`) and reads only its token's namespaces. An unknown token is always refused |
| \`xds.streamsMax\` | count | 10000 | most ADS streams the listener holds at once; the next is refused with RESOURCE_EXHAUSTED. One principal holds at most \`limits.heldSharePerPrincipalRatio\` of them (a loopback caller without a token: the whole cap) |
| \`xds.resourceNamesPerPrincipalMax\` | count | 100000 | most resource names one principal's streams subscribe to together (each stream at most 10,000); past it a request is refused with RESOURCE_EXHAUSTED |
| \`consul.port\` | port | off | serve Consul's agent, catalog and health HTTP API on this port (docs/consul.md). Also \`--consul-port\`. |
| \`consul.namespaces\` | array | \`["default"]\` | the namespaces the Consul API serves; the first is the one a request that names none (\`?ns=\`) reads and writes |
| \`consul.defaultWaitMs\` | ms | \`300000\` | the \`wait\` of a blocking query that gives none (Consul's default: 5 minutes) |
| \`consul.maxWaitMs\` | ms | \`600000\` | longest \`wait\` a blocking query may ask for; longer asks are cut to it (Consul's cap: 10 minutes) |
| \`consul.blockingQueriesMax\` | count | \`10000\` | most blocking queries held at once; the next one is answered 429 |
| \`consul.allowGetWrites\` | boolean | \`false\` | also take deregister and check pass/warn/fail as GET, as Consul before 1.0 and Debian's python3-consul 0.7 send them; off, a GET is answered 405 (Consul's rule since 1.0), so a web page cannot deregister through a link; on, a GET a browser made is still refused |
| \`consul.ttlSweepIntervalMs\` | ms | \`1000\` | how often the TTL checks of the instances this peer owns are looked at: a check not renewed within its TTL turns critical at most this much later |
| \`nacos.port\` | port | off | serve the Nacos naming API (v1 over HTTP, with UDP push) on this port (docs/nacos.md). Also \`--nacos-port\` (\`REGISTRY_NACOS_PORT\`). |
| \`nacos.grpcPort\` | port | port + 1000 | the Nacos 2.x gRPC port; Nacos clients look for it 1000 above the HTTP port (9848 beside 8848), so set it only for clients told of another offset |
| \`nacos.namespaces\` | array | \`["default"]\` | the namespaces the Nacos API serves; Nacos's \`public\` namespace (and none) is \`default\` |
| \`nacos.pushTargetsMax\` | count | \`10000\` | most UDP push targets (a client's listed service) held at once, and most gRPC connections: each a pool of the peer with a share per principal (token, or address without one) of \`limits.heldSharePerPrincipalRatio\`; past either the target is not taken (that client then polls) or the connection is refused |
| \`nacos.pushTargetsPerSourceMax\` | count | \`256\` | most instances and subscriptions per gRPC connection (push targets and connections per client are shares of \`nacos.pushTargetsMax\`: \`limits.heldSharePerPrincipalRatio\`) |
| \`nacos.pushSubscriptionTtlMs\` | ms | \`30000\` | a client that has not listed a service for this long is no longer pushed it (clients list again every 10 s) |
| \`nacos.pushRetryIntervalMs\` | ms | \`1000\` | how long a UDP push waits for its \`push-ack\` before it is sent again |
| \`nacos.pushRetriesMax\` | count | \`3\` | how many times a push without an ack is sent again before it is given up (the client's next list catches up) |

## Profiles

${profileNames.map((name) => `- \`${name}\`: ${profiles[name].description}`).join('\n')}

${profileTable()}
`;
}
