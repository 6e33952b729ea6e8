import { DiscoveryCache } from './cache.js';
import { PeerCaller } from './calls.js';
import { closedError, invalidArgument, RegistryClientError } from './errors.js';
import { createUndiciHttp, withBearerToken } from './http.js';
import { checkName, resolveClientOptions, type RegistryClientOptions } from './options.js';
import { PeerSelector, type PeerState } from './peers.js';
import { parseStrategy, pickInstance, strategyKey } from './pick.js';
import { RegistrationLoop, type Registration } from './registration.js';
import { Subscribers } from './subscribers.js';
import type { Discovery, Instance, InstanceRegistration, PickStrategy, SubscribeHandlers, Subscription } from './types.js';
import { WatchStream } from './watch.js';

/** Most services one client watches: what one watch stream of a peer may name. */
export const MAX_WATCHED_SERVICES = 100;

export interface DiscoverOptions {
  /** `up` (default): only UP instances; `all`: every listed instance, whatever its status. */
  status?: 'up' | 'all';
}

/** The registry client: see docs/client.md. */
export interface RegistryClient {
  /**
   * Registers an instance and keeps it registered: heartbeats at the interval the peer
   * answers, registers again when a heartbeat answers 404, cancels on `close()`. Rejects with
   * the peer's error for a bad instance (`REG_ERR_VALIDATION`...), or
   * REG_CLIENT_ERR_NO_PEER_AVAILABLE when no peer answers within `failoverBudgetMs`.
   */
  register(instance: InstanceRegistration): Promise<Registration>;
  /**
   * The instances of a service from the local cache that a watch stream keeps current. The
   * first call for a service starts watching it and waits (up to `discoverTimeoutMs`) for
   * its first list; later calls answer at once, stale (and flagged so) while no peer can be
   * reached.
   */
  discover(service: string, options?: DiscoverOptions): Promise<Discovery>;
  /** Calls `onUp` / `onDown` / `onChange` as instances of the service come and go (see docs/client.md). */
  subscribe(service: string, handlers: SubscribeHandlers): Subscription;
  /** One UP instance of the service, chosen by `strategy` (default `round-robin`). */
  pick(service: string, strategy?: PickStrategy): Promise<Instance>;
  /** Cancels every registration (best effort), stops the watch and every timer. Idempotent. */
  close(): Promise<void>;
  /** The peer the client sticks to now. */
  readonly currentPeer: string;
  /** Every peer's failover state, in list order. */
  peerStates(): PeerState[];
  /** The services watched so far. */
  readonly watchedServices: readonly string[];
  readonly closed: boolean;
}

/**
 * Builds a client for a registry cluster. Nothing is sent before the first call: `register`
 * starts a registration loop, `discover` / `subscribe` / `pick` start the watch stream.
 * Throws REG_CLIENT_ERR_INVALID_OPTIONS for bad options.
 */
export function createRegistryClient(options: RegistryClientOptions): RegistryClient {
  const resolved = resolveClientOptions(options);
  const { clock, rng, namespace } = resolved;
  const logger = resolved.logger.child({ component: 'registry-client' });
  const transport =
    resolved.http ??
    createUndiciHttp({
      connectionsPerPeer: resolved.connectionsPerPeer,
      connectTimeoutMs: resolved.requestTimeoutMs,
      ...(resolved.ca === undefined ? {} : { ca: resolved.ca }),
    });
  const http = resolved.token === undefined ? transport : withBearerToken(transport, resolved.token);
  const selector = new PeerSelector({ clock, rng, logger }, resolved);
  const caller = new PeerCaller({ http, clock, selector, logger }, resolved);
  const cache = new DiscoveryCache({ clock, logger }, resolved);
  const subscribers = new Subscribers(cache, logger);
  const watch = new WatchStream(
    { http, clock, selector, logger },
    {
      namespace,
      requestTimeoutMs: resolved.requestTimeoutMs,
      idleTimeoutMs: resolved.watchIdleTimeoutMs,
      droppedPauseMs: resolved.backoffBaseMs,
      rejectedPauseMs: resolved.backoffMaxMs,
    },
    cache,
  );
  const registrations = new Set<RegistrationLoop>();
  const watched = new Set<string>();
  /** discover() calls waiting for a service's first list. */
  const waiting = new Map<string, Set<() => void>>();
  const pickCounters = new Map<string, number>();
  let closing: Promise<void> | undefined;

  cache.onChange((service, _ids, kind) => {
    if (kind !== 'snapshot') return;
    const resolvers = waiting.get(service);
    waiting.delete(service);
    for (const resolve of resolvers ?? []) resolve();
  });

  const ensureOpen = () => {
    if (closing) throw closedError();
  };

  const watchService = (service: string) => {
    if (watched.has(service)) return;
    if (watched.size >= MAX_WATCHED_SERVICES) {
      throw new RegistryClientError('REG_CLIENT_ERR_TOO_MANY_SERVICES', `${service}: this client already watches ${MAX_WATCHED_SERVICES} services`);
    }
    watched.add(service);
    watch.setServices([...watched]);
  };

  /** Resolves when the service's first list arrives, the wait runs out, or the client closes. */
  const firstList = (service: string) =>
    new Promise<void>((resolve) => {
      let set = waiting.get(service);
      if (!set) waiting.set(service, (set = new Set()));
      const done = () => {
        timer.cancel();
        waiting.get(service)?.delete(done);
        resolve();
      };
      const timer = clock.setTimeout(done, resolved.discoverTimeoutMs);
      set.add(done);
    });

  const discover = async (service: string, discoverOptions: DiscoverOptions = {}): Promise<Discovery> => {
    ensureOpen();
    checkName('service', service);
    const status = discoverOptions.status ?? 'up';
    if (status !== 'up' && status !== 'all') throw invalidArgument('status', "must be 'up' or 'all'");
    watchService(service);
    if (!cache.has(service)) await firstList(service);
    ensureOpen();
    const found = cache.read(service, { allStatuses: status === 'all' });
    if (found) return found;
    throw new RegistryClientError(
      'REG_CLIENT_ERR_DISCOVERY_UNAVAILABLE',
      `${service}: no peer delivered its instances within ${resolved.discoverTimeoutMs} ms`,
      { peer: selector.current },
    );
  };

  return {
    async register(instance) {
      ensureOpen();
      if (typeof instance !== 'object' || instance === null) throw invalidArgument('instance', 'must be an object');
      checkName('service', instance.service);
      if (instance.instanceId !== undefined && (typeof instance.instanceId !== 'string' || instance.instanceId === '')) {
        throw invalidArgument('instanceId', 'must be a non-empty string');
      }
      const loop = new RegistrationLoop(
        { caller, clock, logger },
        { namespace, registration: { ...instance }, closeTimeoutMs: resolved.closeTimeoutMs },
        (closed) => registrations.delete(closed),
      );
      registrations.add(loop);
      try {
        await loop.start();
      } catch (error) {
        registrations.delete(loop);
        throw error;
      }
      return loop;
    },

    discover,

    subscribe(service, handlers) {
      ensureOpen();
      checkName('service', service);
      if (typeof handlers !== 'object' || handlers === null) throw invalidArgument('handlers', 'must be an object');
      for (const name of ['onUp', 'onDown', 'onChange'] as const) {
        if (handlers[name] !== undefined && typeof handlers[name] !== 'function') throw invalidArgument(`handlers.${name}`, 'must be a function');
      }
      watchService(service);
      return subscribers.add(service, handlers);
    },

    async pick(service, strategy = 'round-robin') {
      const checked = parseStrategy(strategy);
      const { instances } = await discover(service);
      const key = `${service}\u0000${strategyKey(checked)}`;
      const counter = pickCounters.get(key) ?? 0;
      pickCounters.set(key, counter + 1);
      const chosen = pickInstance(instances, checked, { counter, random: rng.next() });
      if (!chosen) throw new RegistryClientError('REG_CLIENT_ERR_NO_INSTANCE', `${service}: no instance to pick (${instances.length} UP)`);
      return chosen;
    },

    close() {
      closing ??= (async () => {
        watch.close();
        subscribers.closeAll();
        for (const resolvers of [...waiting.values()]) for (const resolve of [...resolvers]) resolve();
        await Promise.all([...registrations].map((registration) => registration.close()));
        if (!resolved.http) await http.close();
        logger.debug('closed');
      })();
      return closing;
    },

    get currentPeer() {
      return selector.current;
    },
    peerStates: () => selector.snapshot(),
    get watchedServices() {
      return [...watched];
    },
    get closed() {
      return closing !== undefined;
    },
  };
}
