import { randomInt } from 'node:crypto';
import { systemClock, type Clock } from '../clock/clock.js';
import { seededRng, type Rng } from '../clock/rng.js';
import { invalidArgument, RegistryClientError } from './errors.js';
import type { HttpLayer } from './http.js';
import { silentClientLogger, type ClientLogger } from './logger.js';

/** Everything `createRegistryClient` accepts. Only `peers` is required. */
export interface RegistryClientOptions {
  /**
   * Peer URLs (`http://host:port`, or with a path prefix), in order of preference: the client
   * sticks to the first that answers and fails over along the list. Any one peer is enough.
   */
  peers: readonly string[];
  /** Namespace of every call. Default `default`. */
  namespace?: string;
  /** Every timer and timestamp of the client. Default: the system clock. */
  clock?: Clock;
  /** Backoff jitter and `random`/`weighted` picks. Default: seeded from the OS (node:crypto). */
  rng?: Rng;
  /** Default: logs nothing. A pino logger fits. */
  logger?: ClientLogger;
  /** How HTTP is sent. Default: undici, one connection pool per peer. Tests pass a fake. */
  http?: HttpLayer;
  /** How long one request to one peer may take before it counts as failed. Default 5,000 ms. */
  requestTimeoutMs?: number;
  /** How long `register`, `setStatus` and the like keep failing over before they give up. Default 10,000 ms. */
  failoverBudgetMs?: number;
  /** Backoff of a peer after its first failure; doubles per consecutive failure. Default 100 ms. */
  backoffBaseMs?: number;
  /** Longest backoff of a failing peer. Default 5,000 ms. */
  backoffMaxMs?: number;
  /** `discover` reports a list stale once no stream has been in sync for this long. Default 5,000 ms. */
  staleAfterMs?: number;
  /**
   * A watch stream silent this long is taken for dead and replaced. Peers send a keep-alive
   * every `cluster.watchKeepAliveMs` (15 s by default): keep this above twice that. Default 40,000 ms.
   */
  watchIdleTimeoutMs?: number;
  /** How long `discover` (and `pick`) wait for a first list of a service not watched yet. Default 5,000 ms. */
  discoverTimeoutMs?: number;
  /** How long `close()` tries to cancel registrations. Default 2,000 ms. */
  closeTimeoutMs?: number;
  /** Most connections to one peer (the default undici layer only). Default 8. */
  connectionsPerPeer?: number;
  /**
   * A client token (docs/security.md), sent as `Authorization: Bearer <token>` with every call
   * and watch. Needed when the peers have tokens configured; never logged.
   */
  token?: string;
  /** CA certificate(s) (PEM) to trust for `https://` peers signed by a private CA (the default undici layer only). */
  ca?: string | Buffer;
}

/** The options with every default filled in. */
export interface ResolvedClientOptions {
  peers: string[];
  namespace: string;
  clock: Clock;
  rng: Rng;
  logger: ClientLogger;
  http: HttpLayer | undefined;
  requestTimeoutMs: number;
  failoverBudgetMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  staleAfterMs: number;
  watchIdleTimeoutMs: number;
  discoverTimeoutMs: number;
  closeTimeoutMs: number;
  connectionsPerPeer: number;
  token: string | undefined;
  ca: string | Buffer | undefined;
}

/** Defaults, bounds and units of the numeric options (all ms but the last). */
export const numericOptions = {
  requestTimeoutMs: { default: 5_000, min: 1, max: 600_000 },
  failoverBudgetMs: { default: 10_000, min: 1, max: 3_600_000 },
  backoffBaseMs: { default: 100, min: 1, max: 600_000 },
  backoffMaxMs: { default: 5_000, min: 1, max: 3_600_000 },
  staleAfterMs: { default: 5_000, min: 0, max: 86_400_000 },
  watchIdleTimeoutMs: { default: 40_000, min: 100, max: 3_600_000 },
  discoverTimeoutMs: { default: 5_000, min: 0, max: 600_000 },
  closeTimeoutMs: { default: 2_000, min: 0, max: 600_000 },
  connectionsPerPeer: { default: 8, min: 1, max: 1_024 },
} as const;

type NumericOption = keyof typeof numericOptions;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const NAME_MAX_LENGTH = 128;

function invalidOption(field: string, problem: string): RegistryClientError {
  return new RegistryClientError('REG_CLIENT_ERR_INVALID_OPTIONS', `${field}: ${problem}`);
}

/** A service or namespace name as peers accept it (docs/api.md), checked before any call. */
export function checkName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw invalidArgument(field, 'must be a non-empty string');
  if (value.length > NAME_MAX_LENGTH) throw invalidArgument(field, `must be at most ${NAME_MAX_LENGTH} characters`);
  if (!NAME_PATTERN.test(value)) throw invalidArgument(field, 'must start with a letter or digit and hold only letters, digits, ".", "_", ":" or "-"');
  return value;
}

function checkPeer(value: unknown, index: number): string {
  const field = `peers[${index}]`;
  if (typeof value !== 'string') throw invalidOption(field, 'must be a URL string');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidOption(field, `${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidOption(field, 'must be an http:// or https:// URL');
  if (url.search !== '' || url.hash !== '') throw invalidOption(field, 'must have no query or fragment');
  if (url.username !== '' || url.password !== '') throw invalidOption(field, 'must not hold credentials');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** Validates the options (REG_CLIENT_ERR_INVALID_OPTIONS names the field) and fills in the defaults. */
export function resolveClientOptions(options: RegistryClientOptions): ResolvedClientOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('options', 'must be an object');
  if (!Array.isArray(options.peers) || options.peers.length === 0) throw invalidOption('peers', 'must list at least one peer URL');
  const peers = options.peers.map(checkPeer);
  const duplicate = peers.find((peer, i) => peers.indexOf(peer) !== i);
  if (duplicate) throw invalidOption('peers', `lists ${duplicate} twice`);
  let namespace = 'default';
  if (options.namespace !== undefined) {
    try {
      namespace = checkName('namespace', options.namespace);
    } catch (error) {
      throw invalidOption('namespace', (error as Error).message.replace(/^namespace: /, ''));
    }
  }
  const numbers = {} as Record<NumericOption, number>;
  for (const [name, bounds] of Object.entries(numericOptions) as [NumericOption, (typeof numericOptions)[NumericOption]][]) {
    const value = options[name];
    if (value === undefined) {
      numbers[name] = bounds.default;
      continue;
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      throw invalidOption(name, `must be an integer from ${bounds.min} to ${bounds.max}; got ${JSON.stringify(value)}`);
    }
    numbers[name] = value;
  }
  if (numbers.backoffMaxMs < numbers.backoffBaseMs) throw invalidOption('backoffMaxMs', 'must be at least backoffBaseMs');
  if (options.token !== undefined && (typeof options.token !== 'string' || !/^[\x21-\x7e]+$/.test(options.token))) {
    // The message never repeats the token.
    throw invalidOption('token', 'must be a non-empty string of printable characters without spaces');
  }
  return {
    peers,
    namespace,
    clock: options.clock ?? systemClock,
    rng: options.rng ?? seededRng(randomInt(2 ** 31)),
    logger: options.logger ?? silentClientLogger,
    http: options.http,
    ...numbers,
    token: options.token,
    ca: options.ca,
  };
}
