import type { ListenerDeclaration } from '../adapters/declaration.js';
import { ProtocolConfigError, readListener, type ListenerConfig } from '../config/listener-settings.js';
import type { InstanceData } from '../registry/types.js';

/**
 * The Consul adapter's declaration (src/adapters/declaration.ts): its `consul` section of the
 * file and its flag, its reference rows, its row in the protocols view (and which records it
 * registered), its metrics, and its listener (listener.ts), loaded only when `consul.port` is set.
 */

/** The Consul API's settings beyond port and namespaces (docs/consul.md). */
export interface ConsulConfig extends ListenerConfig {
  /**
   * The `wait` of a blocking query that gives none, in ms. Consul's default is 5 minutes; a
   * shorter one costs one more round trip per watcher and period, a longer one holds a socket.
   */
  defaultWaitMs: number;
  /** Longest `wait` a blocking query may ask for, in ms (Consul's cap: 10 minutes); longer asks are cut to it. */
  maxWaitMs: number;
  /**
   * Most blocking queries this listener holds at once; the next one is answered 429. Each costs
   * a socket and about 2 KB (bench/consul.ts measures it).
   */
  blockingQueriesMax: number;
  /**
   * How often the TTL checks of the instances this peer owns are looked at, in ms: a check not
   * renewed within its TTL turns critical at most this much later.
   */
  ttlSweepIntervalMs: number;
  /**
   * Whether deregister and check pass/warn/fail also take GET, as Consul did before 1.0 and
   * Debian's python3-consul 0.7 still sends. Off (Consul's own rule since 1.0): a GET is
   * answered 405, so that a page in a browser cannot deregister or fail instances through a
   * link or an image. On, a GET that a browser made (it carries `Origin`, `Sec-Fetch-Site`
   * other than `none`, or `Referer`) is still refused.
   */
  allowGetWrites: boolean;
}

/** Defaults of the Consul settings beyond port and namespaces. */
export const CONSUL_DEFAULTS = { defaultWaitMs: 300_000, maxWaitMs: 600_000, blockingQueriesMax: 10_000, ttlSweepIntervalMs: 1_000, allowGetWrites: false } as const;

/** The numeric Consul settings (each with its bounds below). */
type ConsulNumber = Exclude<keyof typeof CONSUL_DEFAULTS, 'allowGetWrites'>;

/** Bounds of each Consul setting (inclusive). */
const CONSUL_BOUNDS: Record<ConsulNumber, [number, number]> = {
  defaultWaitMs: [1_000, 3_600_000],
  maxWaitMs: [1_000, 3_600_000],
  blockingQueriesMax: [1, 1_000_000],
  ttlSweepIntervalMs: [100, 60_000],
};

/** The `consul` section: the listener's port and namespaces, and the settings of CONSUL_DEFAULTS. */
function readConsul(doc: unknown, port: number | undefined): ConsulConfig {
  const names = Object.keys(CONSUL_BOUNDS) as ConsulNumber[];
  const { section, config } = readListener('consul', doc, port, Object.keys(CONSUL_DEFAULTS));
  const out: ConsulConfig = { ...config, ...CONSUL_DEFAULTS };
  for (const name of names) {
    const value = section[name];
    if (value === undefined) continue;
    const [min, max] = CONSUL_BOUNDS[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ProtocolConfigError(`consul.${name}`, `must be an integer between ${min} and ${max}`);
    }
    out[name] = value;
  }
  if (out.defaultWaitMs > out.maxWaitMs) throw new ProtocolConfigError('consul.defaultWaitMs', 'must not be longer than consul.maxWaitMs');
  const allowGetWrites = section.allowGetWrites ?? CONSUL_DEFAULTS.allowGetWrites;
  if (typeof allowGetWrites !== 'boolean') throw new ProtocolConfigError('consul.allowGetWrites', 'must be true or false');
  return { ...out, allowGetWrites };
}

/** Records written before Consul's record extension kept its tags and checks in metadata keys under `consul.`. */
function registeredThroughConsul(data: InstanceData): boolean {
  for (const key in data.metadata) if (key.startsWith('consul.')) return true;
  return false;
}

export const consulDeclaration: ListenerDeclaration<'consul', ConsulConfig> = {
  name: 'consul',
  label: 'Consul',
  transport: 'HTTP',
  credentials: ['x-consul-token', 'bearer', 'query-token'],
  settings: { section: 'consul', flag: '--consul-port', env: 'REGISTRY_CONSUL_PORT', help: 'serve the Consul-compatible HTTP API on this port; off by default' },
  docs: 'docs/consul.md',
  extension: 'consul',
  readSettings: readConsul,
  reference: {
    intro: 'a Consul-compatible HTTP API',
    rows: [
      { field: 'port', type: 'port', default: 'off', doc: 'serve Consul\'s agent, catalog and health HTTP API on this port (docs/consul.md). Also `--consul-port`.' },
      { field: 'namespaces', type: 'array', default: '`["default"]`', doc: 'the namespaces the Consul API serves; the first is the one a request that names none (`?ns=`) reads and writes' },
      { field: 'defaultWaitMs', type: 'ms', default: '`300000`', doc: 'the `wait` of a blocking query that gives none (Consul\'s default: 5 minutes)' },
      { field: 'maxWaitMs', type: 'ms', default: '`600000`', doc: 'longest `wait` a blocking query may ask for; longer asks are cut to it (Consul\'s cap: 10 minutes)' },
      { field: 'blockingQueriesMax', type: 'count', default: '`10000`', doc: 'most blocking queries held at once; the next one is answered 429' },
      { field: 'allowGetWrites', type: 'boolean', default: '`false`', doc: 'also take deregister and check pass/warn/fail as GET, as Consul before 1.0 and Debian\'s python3-consul 0.7 send them; off, a GET is answered 405 (Consul\'s rule since 1.0), so a web page cannot deregister through a link; on, a GET a browser made is still refused' },
      { field: 'ttlSweepIntervalMs', type: 'ms', default: '`1000`', doc: 'how often the TTL checks of the instances this peer owns are looked at: a check not renewed within its TTL turns critical at most this much later' },
    ],
  },
  listens: (consul) => (consul.port === null ? [] : [{ what: 'the Consul listener', port: consul.port }]),
  registered: registeredThroughConsul,
  metrics: [],
  starter: async () => (await import('./listener.js')).startConsulListener,
};
