import type { ListenerDeclaration } from '../adapters/declaration.js';
import { ProtocolConfigError, readInteger, readListener, type ListenerConfig } from '../config/listener-settings.js';

/**
 * The Nacos adapter's declaration (src/adapters/declaration.ts): its `nacos` section of the
 * file (with the gRPC port at +1000) and its flag, its reference rows, its row in the protocols
 * view (and which records it registered), its metrics, and its listener (listener.ts, with
 * grpc-js), loaded only when `nacos.port` is set.
 */

/** The Nacos naming API's settings beyond port and namespaces (docs/nacos.md). */
export interface NacosConfig extends ListenerConfig {
  /**
   * The Nacos 2.x gRPC port. Null: `port` + 1000, where Nacos clients look for it (9848 beside
   * 8848); set it only for clients told of another offset. Off when `port` is null.
   */
  grpcPort: number | null;
  /**
   * Most UDP push targets (v1 clients that list with `udpPort`) held at once, and most gRPC
   * connections: the caps of two held-slot pools of the peer (the adapter contract's limits
   * port), each with a share per principal (`limits.heldSharePerPrincipalRatio`).
   */
  pushTargetsMax: number;
  /**
   * Most instances and subscriptions per gRPC connection (the name is from when it also capped
   * push targets and connections per source address: those are per-principal shares now).
   */
  pushTargetsPerSourceMax: number;
  /**
   * How long a UDP push target lives after its client last listed the service, in ms. Nacos
   * clients list again every `cacheMillis` (10 s): a client that stops listing stops being
   * pushed to after this long.
   */
  pushSubscriptionTtlMs: number;
  /** How long a push waits for its `push-ack` before it is sent again, in ms. */
  pushRetryIntervalMs: number;
  /** How many times a push is sent again without an ack before it is given up (the client's next list catches up). */
  pushRetriesMax: number;
}

/** Defaults of the Nacos settings beyond port, namespaces and grpcPort. */
export const NACOS_DEFAULTS = {
  pushTargetsMax: 10_000,
  pushTargetsPerSourceMax: 256,
  pushSubscriptionTtlMs: 30_000,
  pushRetryIntervalMs: 1_000,
  pushRetriesMax: 3,
} as const;

/** Bounds of each Nacos setting (inclusive). */
const NACOS_BOUNDS: Record<keyof typeof NACOS_DEFAULTS, [number, number]> = {
  pushTargetsMax: [1, 1_000_000],
  pushTargetsPerSourceMax: [1, 100_000],
  pushSubscriptionTtlMs: [1_000, 3_600_000],
  pushRetryIntervalMs: [10, 60_000],
  pushRetriesMax: [0, 100],
};

/** How far above the HTTP port Nacos clients look for the gRPC port. */
export const NACOS_GRPC_PORT_OFFSET = 1_000;

/** The `nacos` section: port and namespaces, `grpcPort` (default port + 1000) and the push settings. */
function readNacos(doc: unknown, port: number | undefined): NacosConfig {
  const names = Object.keys(NACOS_DEFAULTS) as (keyof typeof NACOS_DEFAULTS)[];
  const { section, config } = readListener('nacos', doc, port, ['grpcPort', ...names]);
  const out: NacosConfig = { ...config, grpcPort: null, ...NACOS_DEFAULTS };
  for (const name of names) {
    const [min, max] = NACOS_BOUNDS[name];
    out[name] = readInteger(`nacos.${name}`, section[name], NACOS_DEFAULTS[name], min, max);
  }
  if (section.grpcPort !== undefined) out.grpcPort = readInteger('nacos.grpcPort', section.grpcPort, 0, 0, 65_535);
  else if (config.port !== null && config.port !== 0) {
    const grpcPort = config.port + NACOS_GRPC_PORT_OFFSET;
    if (grpcPort > 65_535) throw new ProtocolConfigError('nacos.grpcPort', `nacos.port ${config.port} + ${NACOS_GRPC_PORT_OFFSET} is past 65535: set nacos.grpcPort`);
    out.grpcPort = grpcPort;
  } else if (config.port === 0) out.grpcPort = 0;
  return out;
}

export const nacosDeclaration: ListenerDeclaration<'nacos', NacosConfig> = {
  name: 'nacos',
  label: 'Nacos',
  transport: 'HTTP, gRPC and UDP',
  credentials: ['nacos-access-token', 'bearer'],
  settings: {
    section: 'nacos',
    flag: '--nacos-port',
    env: 'REGISTRY_NACOS_PORT',
    help: 'serve the Nacos naming API (HTTP, UDP push; gRPC at port + 1000) on this port; off by default',
  },
  docs: 'docs/nacos.md',
  extension: 'nacos',
  readSettings: readNacos,
  reference: {
    intro: 'the Nacos naming API',
    rows: [
      { field: 'port', type: 'port', default: 'off', doc: 'serve the Nacos naming API (v1 over HTTP, with UDP push) on this port (docs/nacos.md). Also `--nacos-port` (`REGISTRY_NACOS_PORT`).' },
      { field: 'grpcPort', type: 'port', default: 'port + 1000', doc: 'the Nacos 2.x gRPC port; Nacos clients look for it 1000 above the HTTP port (9848 beside 8848), so set it only for clients told of another offset' },
      { field: 'namespaces', type: 'array', default: '`["default"]`', doc: 'the namespaces the Nacos API serves; Nacos\'s `public` namespace (and none) is `default`' },
      { field: 'pushTargetsMax', type: 'count', default: '`10000`', doc: 'most UDP push targets (a client\'s listed service) held at once, and most gRPC connections: each a pool of the peer with a share per principal (token, or address without one) of `limits.heldSharePerPrincipalRatio`; past either the target is not taken (that client then polls) or the connection is refused' },
      { field: 'pushTargetsPerSourceMax', type: 'count', default: '`256`', doc: 'most instances and subscriptions per gRPC connection (push targets and connections per client are shares of `nacos.pushTargetsMax`: `limits.heldSharePerPrincipalRatio`)' },
      { field: 'pushSubscriptionTtlMs', type: 'ms', default: '`30000`', doc: 'a client that has not listed a service for this long is no longer pushed it (clients list again every 10 s)' },
      { field: 'pushRetryIntervalMs', type: 'ms', default: '`1000`', doc: 'how long a UDP push waits for its `push-ack` before it is sent again' },
      { field: 'pushRetriesMax', type: 'count', default: '`3`', doc: 'how many times a push without an ack is sent again before it is given up (the client\'s next list catches up)' },
    ],
  },
  listens: (nacos) => [
    ...(nacos.port === null ? [] : [{ what: 'the Nacos listener', port: nacos.port }]),
    ...(nacos.grpcPort === null ? [] : [{ what: 'the Nacos gRPC listener', port: nacos.grpcPort }]),
  ],
  portNote: 'gRPC: `nacos.grpcPort`, default port + 1000',
  metrics: [],
  starter: async () => (await import('./listener.js')).startNacosListener,
};
