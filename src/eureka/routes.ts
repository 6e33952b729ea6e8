import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import { invalid, RegistryError } from '../errors.js';
import type { Application } from '../app/application.js';
import { whenDurable } from '../app/durable-write.js';
import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import type { InstanceStatus } from '../registry/types.js';
import { parseInstanceId, parseMetadata, parseName } from '../registry/validate.js';
import { isServed } from '../registry/visibility.js';
import { buildDeltaDocument } from './delta-document.js';
import { yieldToLoop } from '../http/loop-budget.js';
import {
  findInApp,
  findLiveByIdInTurns,
  registrationKey,
  type ReadContext,
  vipMatcher,
} from './documents.js';
import { TurnBudget } from './turn-budget.js';
import { readEurekaInstance } from './instance-input.js';
import { toXml } from './xml.js';
import { EUREKA_PREFIXES, EUREKA_ROUTES } from './route-definitions.js';
import { serve } from '../http/route-definition.js';
import { toEurekaInstance } from './instance-view.js';
import { PARTIAL_WINDOW_HASH_CODE, RecentChanges } from './recent-changes.js';
import { sendBody, SharedEurekaDocuments, type Format } from './shared-documents.js';
import { eurekaView, toCoreData, toCorePatch, type EurekaView } from './attributes.js';
import {
  decideRenewal,
  planOverrideRemoval,
  planRegistration,
  planStatusOverride,
  type StatusPatch,
} from './status-rules.js';
import {
  acceptsGzip,
  first,
  installWire,
  queryDirtyTimestamp,
  queryStatus,
  renewalQuery,
  sendDocument,
  sendNotFound,
  UNSUPPORTED_BODY,
  wantsJson,
  type Query,
} from './wire.js';

/** How long a delta document is shared without a change: the window it answers moves with time. */
const DELTA_MAX_AGE_MS = 1_000;

export { EUREKA_PREFIXES } from './route-definitions.js';

const VIP_MAX_LENGTH = 1_024;

/** A register body of another content type is a 415, before the schema would call it a 400. */
const refuseUnsupportedBody: preValidationHookHandler = (request, _reply, done) => {
  if (request.body === UNSUPPORTED_BODY) return done(new RegistryError('REG_ERR_UNSUPPORTED_MEDIA_TYPE', 'body: send application/json or application/xml'));
  done();
};

/** What the Eureka API needs: the application layer, the clock (status rules, delta window) and its settings. */
export interface EurekaApiOptions {
  application: Application;
  clock: Clock;
  config: Pick<RegistryConfig, 'limits' | 'cluster' | 'security'>;
  prefixes?: readonly string[];
}

interface RouteOptions extends EurekaApiOptions {
  recent: RecentChanges;
  shared: SharedEurekaDocuments;
}

type AppParams = { app: string };
type InstanceParams = { app: string; id: string };

/** The app of a URL, upper-cased: clients may write it in any case. */
function appOf(request: FastifyRequest): string {
  return parseName('app', (request.params as AppParams).app).toUpperCase();
}

function instanceOf(request: FastifyRequest): { app: string; id: string } {
  return { app: appOf(request), id: parseInstanceId('id', (request.params as InstanceParams).id) };
}

function vipOf(request: FastifyRequest, name: 'vip' | 'svip'): string {
  const vip = (request.params as Record<string, string>)[name] ?? '';
  if (vip.length === 0 || vip.length > VIP_MAX_LENGTH) throw invalid(name, `must be 1 to ${VIP_MAX_LENGTH} characters`);
  return vip;
}

/**
 * The Eureka-compatible API (docs/eureka.md), under each prefix. One delta window serves all
 * prefixes. Every write goes through the registry, so an instance registered here is one
 * record with what `/v1` and replication see.
 */
export async function eurekaApi(app: FastifyInstance, options: EurekaApiOptions): Promise<void> {
  const { application, clock, config } = options;
  const { reads } = application;
  const recent = new RecentChanges(
    { clock, store: reads.store, leaseView: () => reads.leaseView() },
    { windowMs: config.cluster.eurekaDeltaWindowMs, namespace: config.security.eurekaNamespace },
  );
  // Started by the first Eureka read (`demand`, in each prefix's GET hook): a peer no Eureka client reads keeps none.
  app.addHook('onClose', async () => recent.stop());
  // One set of shared documents for every prefix: a flood of fetches shares one build.
  const shared = new SharedEurekaDocuments(
    { views: reads.views, store: reads.store, leaseView: () => reads.leaseView() },
    { namespace: config.security.eurekaNamespace, defaults: defaultsOf(config) },
  );
  app.addHook('onClose', async () => shared.close());
  for (const prefix of options.prefixes ?? EUREKA_PREFIXES) {
    await app.register(eurekaRoutes, { ...options, prefix, recent, shared });
  }
}

function defaultsOf(config: Pick<RegistryConfig, 'cluster'>) {
  return { renewalIntervalSecs: Math.max(1, Math.round(config.cluster.heartbeatIntervalMs / 1000)) };
}

async function eurekaRoutes(app: FastifyInstance, options: RouteOptions): Promise<void> {
  const { recent, shared, clock, config } = options;
  const { reads, writes } = options.application;
  const { store } = reads;
  const { limits, cluster } = config;
  const namespace = config.security.eurekaNamespace;
  const defaults = defaultsOf(config);
  const read = (): ReadContext => ({ store, namespace, view: reads.leaseView(), defaults });
  // Registry writes go through the application layer and are answered once durable (whenDurable).
  const done = (reply: FastifyReply) => () => reply.code(200).send();
  installWire(app);

  // Any read may be a client's first fetch, after which it asks for deltas. At `preHandler`,
  // after the routes' own `onRequest` hooks: a read the readiness gate answers 503 starts nothing.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.method === 'GET') recent.demand();
    done();
  });

  const formatOf = (request: FastifyRequest): Format => (wantsJson(request) ? 'json' : 'xml');
  const gzipOf = (request: FastifyRequest) => acceptsGzip(request.headers['accept-encoding']);

  const fullRegistry = async (request: FastifyRequest, reply: FastifyReply) => {
    const format = formatOf(request);
    return sendBody(reply, await shared.registry(format, gzipOf(request)), format);
  };
  serve(app, EUREKA_ROUTES.apps, fullRegistry);
  // eureka-js-client asks for `<servicePath>` itself, which ends with a slash.
  serve(app, EUREKA_ROUTES.appsSlash, fullRegistry);

  serve(app, EUREKA_ROUTES.delta, async (request, reply) => {
    const format = formatOf(request);
    const gzipped = gzipOf(request);
    const revision = store.revision;
    const body = await shared.delta(revision, format, DELTA_MAX_AGE_MS, gzipped, () =>
      buildDeltaDocument({
        store,
        leaseView: () => reads.leaseView(),
        defaults,
        format,
        version: revision,
        changes: recent.entries(),
        // A window younger than itself may miss a client's changes: a hash code no copy matches.
        hashCode: () => (recent.whole ? shared.hashCode() : Promise.resolve(PARTIAL_WINDOW_HASH_CODE)),
        yieldTurn: yieldToLoop,
      }),
    );
    return sendBody(reply, body, format);
  });

  serve(app, EUREKA_ROUTES.app, async (request, reply) => {
    const format = formatOf(request);
    const body = await shared.application(appOf(request), format, gzipOf(request));
    return body ? sendBody(reply, body, format) : sendNotFound(reply);
  });

  serve(
    app,
    EUREKA_ROUTES.register,
    async (request, reply) => {
      const appName = appOf(request);
      // The body is checked by its schema (EurekaInstanceBody) before this runs.
      const parsed = readEurekaInstance(request.body, { limits, bounds: cluster });
      if (parsed.app !== appName) {
        throw new RegistryError('REG_ERR_EUREKA_APP_MISMATCH', `instance.app: the body says ${parsed.app} but the URL says ${appName}`);
      }
      // Synchronous inside the write: read, decide, write (nothing can change in between).
      const registered = writes.step((registry) => {
        const key = registrationKey(store, namespace, appName, parsed.instanceId);
        const current = registry.find(key);
        const plan = planRegistration(
          parsed,
          current && { data: eurekaView(current.record.data), leaseDurationMs: current.record.leaseDurationMs },
          clock.nowMs(),
        );
        registry.register({ ...key, data: toCoreData(plan.data), leaseDurationMs: plan.leaseDurationMs });
      });
      // 204, not 200: Eureka clients take anything else for a failed registration.
      return whenDurable(registered, () => reply.code(204).send());
    },
    { preValidation: refuseUnsupportedBody },
  );

  serve(app, EUREKA_ROUTES.instance, async (request, reply) => {
    const { app: appName, id } = instanceOf(request);
    const entry = findInApp(store, namespace, appName, id);
    if (!entry || !isServed(entry, reads.leaseView())) return sendNotFound(reply);
    return sendDocument(request, reply, { instance: toEurekaInstance(entry, defaults) });
  });

  serve(app, EUREKA_ROUTES.heartbeat, async (request, reply) => {
    const { app: appName, id } = instanceOf(request);
    const query = renewalQuery(request.query as Query);
    const found = findInApp(store, namespace, appName, id);
    if (!found) return sendNotFound(reply);
    const renewal = writes.step((registry) => {
      const entry = registry.heartbeat(found.record);
      const decision = decideRenewal(eurekaView(entry.record.data), query);
      if (decision.kind === 'register-again') return true;
      if (decision.patch) registry.update(entry.record, toCorePatch(entry.record.data, decision.patch));
      return false;
    }, 'renewal');
    return whenDurable(renewal, (registerAgain) => (registerAgain ? sendNotFound(reply) : reply.code(200).send()));
  });

  serve(app, EUREKA_ROUTES.cancel, async (request, reply) => {
    const { app: appName, id } = instanceOf(request);
    const found = findInApp(store, namespace, appName, id);
    if (!found) return sendNotFound(reply);
    return whenDurable(writes.cancel(found.record), done(reply));
  });

  /** Both status routes: read the query, find the instance, write what the rule plans. */
  const statusRoute =
    (plan: (data: EurekaView, value: InstanceStatus | undefined, dirtyMs?: number) => StatusPatch | null, valueRequired: boolean) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const { app: appName, id } = instanceOf(request);
      const query = request.query as Query;
      const value = queryStatus(query, 'value') ?? undefined;
      if (valueRequired && value === undefined) throw invalid('value', 'is required: UP, DOWN, STARTING or OUT_OF_SERVICE');
      const lastDirtyTimestampMs = queryDirtyTimestamp(query);
      const found = findInApp(store, namespace, appName, id);
      if (!found) return sendNotFound(reply);
      const patch = plan(eurekaView(found.record.data), value, lastDirtyTimestampMs);
      if (!patch) return reply.code(200).send();
      return whenDurable(writes.update(found.record, toCorePatch(found.record.data, patch)), done(reply));
    };
  serve(
    app,
    EUREKA_ROUTES.overrideStatus,
    statusRoute((data, value, dirtyMs) => (value === undefined ? null : planStatusOverride(data, value, dirtyMs)), true),
  );
  serve(app, EUREKA_ROUTES.removeOverride, statusRoute(planOverrideRemoval, false));

  serve(app, EUREKA_ROUTES.metadata, async (request, reply) => {
    const { app: appName, id } = instanceOf(request);
    const pairs = Object.entries(request.query as Query).map(([key, value]) => [key, first(value) ?? ''] as const);
    const found = findInApp(store, namespace, appName, id);
    if (!found) return sendNotFound(reply);
    const metadata = parseMetadata('metadata', { ...found.record.data.metadata, ...Object.fromEntries(pairs) }, limits);
    return whenDurable(writes.update(found.record, { metadata }), done(reply));
  });

  serve(app, EUREKA_ROUTES.instanceById, async (request, reply) => {
    const id = parseInstanceId('id', (request.params as { id: string }).id);
    const entry = await findLiveByIdInTurns(store, namespace, id, () => reads.leaseView(), new TurnBudget({ yieldTurn: yieldToLoop }));
    return entry ? sendDocument(request, reply, { instance: toEurekaInstance(entry, defaults) }) : sendNotFound(reply);
  });

  const vip = async (request: FastifyRequest, reply: FastifyReply, secure: boolean) => {
    const format = formatOf(request);
    const matches = vipMatcher(vipOf(request, secure ? 'svip' : 'vip'), secure);
    return sendBody(reply, await shared.vip(matches, format, gzipOf(request)), format);
  };
  serve(app, EUREKA_ROUTES.vip, (request, reply) => vip(request, reply, false));
  serve(app, EUREKA_ROUTES.secureVip, (request, reply) => vip(request, reply, true));
}
