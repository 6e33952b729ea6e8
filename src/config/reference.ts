import { LISTENER_ADAPTERS } from '../adapters/listeners.js';
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

/** `a, b, c and d`. */
function listFormat(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Every protocol listener's rows, from its declaration (src/<protocol>/declaration.ts). */
function listenerTable(): string {
  const lines = ['| field | type | default | what it does |', '| --- | --- | --- | --- |'];
  for (const adapter of LISTENER_ADAPTERS) {
    for (const row of adapter.reference.rows) lines.push(`| \`${adapter.name}.${row.field}\` | ${row.type} | ${row.default} | ${row.doc} |`);
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

Beside the HTTP API a peer can serve ${listFormat(LISTENER_ADAPTERS.map((adapter) => adapter.reference.intro))}, each on a
port of its own, on the peer's host, and each off until its port is set. They serve the same
records as \`/v1\` and the Eureka API.

${listenerTable()}

## Profiles

${profileNames.map((name) => `- \`${name}\`: ${profiles[name].description}`).join('\n')}

${profileTable()}
`;
}
