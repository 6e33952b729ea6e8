import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serve } from '../http/route-definition.js';
import { CLIENT_ROUTES } from './route-definitions.js';
import { invalid, RegistryError } from '../errors.js';
import type { Application } from '../app/application.js';
import { whenDurable, type Durable } from '../app/durable-write.js';
import type { Static } from 'typebox';
import { bodyReadByShortcut, throwShortcutWriteFailure, type ShortcutContext } from '../http/front-door.js';
import { bodyValidator } from '../schema/body-schema.js';
import type { RegisterResult } from '../registry/registry.js';
import { RegisterBody } from './schemas.js';
import { REGISTER_PATH, registerShortcut } from './register-shortcut.js';
import { heartbeatShortcut } from './heartbeat-shortcut.js';
import type { RegistryConfig } from '../config/load.js';
import { orderByProximity } from '../registry/queries.js';
import { renewalIntervalMs } from '../registry/lease-terms.js';
import { InstanceJsonCache, listingBytes, selectListing, type ListingSelection } from './instance-json.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import {
  parseCount,
  parseDuration,
  parseGroupFilter,
  parseInstanceId,
  parseName,
  parseNamespace,
  registrationOf,
} from '../registry/validate.js';
import { toInstanceView, toRenewedView } from '../registry/view.js';
import type { WatchShares } from '../http/access/watch-shares.js';
import { DISCOVER_PREFIX, discoverShortcut, JSON_TYPE, type SharedListing } from './discover-shortcut.js';
import { sendChunks } from '../http/send-chunks.js';
import { ServicesListings } from './services-listing.js';

/** How long a long poll waits when it gives no `wait`. */
const DEFAULT_WAIT_MS = 30_000;

type Query = Record<string, string | undefined>;
type InstanceParams = { service: string; id: string };

function namespaceOf(request: FastifyRequest): string {
  return parseNamespace((request.query as Query).namespace);
}

/** An instance route's key from its path's service and id and the query's namespace (its shortcut's too). */
function keyOf(service: string, id: string, query: Query): InstanceKey {
  return {
    namespace: parseNamespace(query.namespace),
    service: parseName('service', service),
    instanceId: parseInstanceId('id', id),
  };
}

function instanceKey(request: FastifyRequest): InstanceKey {
  const params = request.params as InstanceParams;
  return keyOf(params.service, params.id, request.query as Query);
}

/**
 * The parts of a listing request, checked in the order the route names them (the namespace,
 * the service, `status`, `group`): a `REG_ERR_VALIDATION` naming the first that is wrong.
 */
interface ListingParams {
  namespace: string;
  service: string;
  group: string | null;
}

function listingParams(rawService: string, query: Query): ListingParams {
  const namespace = parseNamespace(query.namespace);
  const service = parseName('service', rawService);
  if (query.status !== undefined && query.status !== 'all' && query.status !== 'up') {
    throw new RegistryError('REG_ERR_VALIDATION', 'status: must be "all" or "up"');
  }
  return { namespace, service, group: parseGroupFilter(query.group) };
}

/** The native client API under `/v1` (see docs/api.md). */
export async function clientRoutes(
  app: FastifyInstance,
  options: {
    application: Application;
    config: Pick<RegistryConfig, 'limits' | 'cluster' | 'services'>;
    /** Where the discover route's shortcut goes (absent: every request goes through fastify). */
    shortcuts?: ShortcutContext;
    /** The held slots' shares per principal (long polls; src/http/access/watch-shares.ts). */
    shares: WatchShares;
  },
): Promise<void> {
  const { writes, reads } = options.application;
  const { limits, cluster, services } = options.config;
  const view = () => reads.leaseView();
  /** The instance with how often its client should heartbeat. */
  const withInterval = (entry: StoredInstance) =>
    toRenewedView(entry, view(), renewalIntervalMs(entry.record, cluster.heartbeatIntervalMs));
  const listingJson = new InstanceJsonCache(reads.store, limits.listingCacheMaxBytes);
  app.addHook('onClose', async () => listingJson.close());

  /** The register route's write, from its checked body and the query's namespace (its shortcut's too). */
  const registration = (body: Static<typeof RegisterBody>, queryNamespace: string | undefined): Durable<RegisterResult> => {
    const bodyNamespace = body.namespace;
    if (queryNamespace !== undefined && bodyNamespace !== undefined && queryNamespace !== bodyNamespace) {
      throw new RegistryError(
        'REG_ERR_NAMESPACE_MISMATCH',
        `namespace: the body says ${JSON.stringify(bodyNamespace)} but the query says ${JSON.stringify(queryNamespace)}`,
      );
    }
    const namespace = parseNamespace(queryNamespace ?? bodyNamespace);
    return writes.register(registrationOf(body, namespace, limits, cluster));
  };

  // The write routes are not async: without a data dir (or with nothing to wait for) they
  // answer in the same tick; `whenDurable` waits for the durability barrier only when there is one.
  serve(
    app,
    CLIENT_ROUTES.register,
    (request, reply) => {
      throwShortcutWriteFailure(request.raw);
      // The body is checked by its schema (RegisterBody) before this runs.
      return whenDurable(registration(request.body, (request.query as Query).namespace), ({ entry, created }) => {
        reply.code(created ? 201 : 200);
        return withInterval(entry);
      });
    },
    // A request the shortcut read the body of and handed back brings that body.
    { preParsing: bodyReadByShortcut },
  );
  if (options.shortcuts) {
    const parser = app.getDefaultJsonParser('error', 'error');
    const check = bodyValidator(RegisterBody);
    const shortcut = registerShortcut(options.shortcuts, {
      bodyLimit: limits.bodyMaxBytes,
      parseJson: (text) => {
        let parsed: { error: Error | null; value: unknown } = { error: null, value: undefined };
        parser(undefined as never, text, (error, value) => {
          parsed = { error, value };
        });
        if (parsed.error) throw parsed.error;
        return parsed.value;
      },
      fits: (body) => check(body) === true,
      register: (body, queryNamespace) => registration(body as Static<typeof RegisterBody>, queryNamespace),
      // What fastify sends for the route's answer: its JSON (openapi/route-docs.ts, plainJson).
      answer: ({ entry }) => JSON.stringify(withInterval(entry)),
    });
    options.shortcuts.frontDoor.add(REGISTER_PATH, shortcut);
  }

  /**
   * A heartbeat's answer: the bytes of JSON.stringify(withInterval(entry)), from the record's
   * cached JSON parts rather than serialized whole each time (that was 6% of a heartbeat's CPU
   * in a profile of the peer: `bench/loop-probe.cjs` under bench/cpu-per-request.ts --route heartbeat).
   */
  const renewedJson = (entry: StoredInstance) => listingJson.renewedJson(entry, view(), renewalIntervalMs(entry.record, cluster.heartbeatIntervalMs));

  serve(app, CLIENT_ROUTES.heartbeat, (request, reply) => {
    throwShortcutWriteFailure(request.raw);
    const key = instanceKey(request);
    reply.type(JSON_TYPE);
    return whenDurable(writes.heartbeat(key), renewedJson);
  });
  if (options.shortcuts) {
    const shortcut = heartbeatShortcut(options.shortcuts, {
      key: keyOf,
      heartbeat: (key) => writes.heartbeat(key),
      answer: renewedJson,
    });
    options.shortcuts.frontDoor.add(DISCOVER_PREFIX, shortcut);
  }

  serve(app, CLIENT_ROUTES.status, async (request) => {
    const key = instanceKey(request);
    // The body is checked by its schema (StatusBody) before this runs.
    const { status } = request.body;
    return whenDurable(writes.update(key, { status }), (entry) => toInstanceView(entry, view()));
  });

  serve(app, CLIENT_ROUTES.cancel, async (request) => {
    const key = instanceKey(request);
    return whenDurable(writes.cancel(key), (entry) => {
      const { namespace, service, instanceId, version } = entry.record;
      return { namespace, service, instanceId, version, cancelled: true };
    });
  });

  serve(app, CLIENT_ROUTES.instance, async (request) => {
    const key = instanceKey(request);
    const entry = reads.find(key);
    if (!entry || entry.hidden) {
      throw new RegistryError('REG_ERR_INSTANCE_NOT_FOUND', `instance ${key.instanceId} of service ${key.service} is not registered`);
    }
    return toInstanceView(entry, view());
  });

  const perService = Object.keys(services).length > 0;
  /** What a listing shows of the view: statuses, the service's protection threshold, a group. */
  const selectionOf = ({ namespace, service, group }: ListingParams, query: Query): ListingSelection => {
    // Most peers set no per-service settings: then no key is built for every read.
    const threshold = (perService ? services[`${namespace}/${service}`]?.protectThresholdRatio : undefined) ?? cluster.protectThresholdRatio;
    return { allStatuses: query.status === 'all', protectThresholdRatio: threshold, group };
  };
  /**
   * The hottest read, `GET /v1/services/:service` without `near` or `index`: the service's
   * revision and the bytes of its listing, built once per view (a change, or at most once a
   * second for the lease countdown) from its second read on, and shared by every reader
   * (docs/api.md). Answered by the route, and by its shortcut before fastify (discover-shortcut.ts).
   */
  const sharedListing = (params: ListingParams, query: Query): SharedListing => {
    const served = reads.views.get(params.namespace, params.service);
    return { revision: served.revision, bytes: listingBytes(reads.views, served, selectionOf(params, query), listingJson, view) };
  };
  if (options.shortcuts) {
    const shortcut = discoverShortcut(options.shortcuts, (rawService, query) => sharedListing(listingParams(rawService, query), query));
    options.shortcuts.frontDoor.add(DISCOVER_PREFIX, shortcut);
  }

  /** The listing of a service now: the shared bytes, or (ordered by proximity) its own object. */
  const listing = (reply: FastifyReply, params: ListingParams, query: Query) => {
    if (query.near === undefined) {
      const shared = sharedListing(params, query);
      reply.header('X-Registry-Index', String(shared.revision));
      reply.type(JSON_TYPE);
      return shared.bytes;
    }
    const served = reads.views.get(params.namespace, params.service);
    reply.header('X-Registry-Index', String(served.revision));
    if (query.near.length === 0 || query.near.length > 64) throw invalid('near', 'must be a zone name of 1 to 64 characters');
    const { entries, ...shown } = selectListing(served, selectionOf(params, query), view);
    const leases = { ...view(), nowMs: served.builtAtMs };
    const instances = entries.map((entry) => toInstanceView(entry, leases));
    return { ...shown, instances: orderByProximity(instances, query.near, (zone) => reads.regionOfZone(zone)), near: query.near };
  };

  // Not async: a plain read answers in the same tick, with no promise to settle (a discover
  // is the hottest route there is); only a long poll waits.
  serve(app, CLIENT_ROUTES.service, (request, reply) => {
    const query = request.query as Query;
    // Checked before waiting: a bad request is answered at once.
    const params = listingParams((request.params as { service: string }).service, query);
    if (query.index === undefined) return listing(reply, params, query);
    // Long poll: answer as soon as the service's revision passes `index`, or after `wait`.
    const index = parseCount('index', query.index);
    const waitMs = Math.min(query.wait === undefined ? DEFAULT_WAIT_MS : parseDuration('wait', query.wait), cluster.longPollMaxWaitMs);
    const abort = new AbortController();
    reply.raw.on('close', () => abort.abort());
    // Past this principal's share of the long polls: 429; the slot is held until the answer.
    const slot = options.shares.longPoll(request);
    let waiting: Promise<boolean>;
    try {
      waiting = reads.watch.waitForChange(params.namespace, params.service, index, waitMs, abort.signal);
    } catch (error) {
      slot.release();
      throw error;
    }
    return waiting.finally(() => slot.release()).then(() => listing(reply, params, query));
  });

  // Every service of a namespace: built once per change in slices and shared (services-listing.ts).
  const servicesListings = new ServicesListings(reads);
  serve(app, CLIENT_ROUTES.services, async (request, reply) => {
    const namespace = namespaceOf(request);
    const group = parseGroupFilter((request.query as Query).group);
    const listing = await servicesListings.listing(namespace, group);
    reply.header('X-Registry-Index', String(listing.revision));
    return sendChunks(reply, listing, JSON_TYPE);
  });
}
