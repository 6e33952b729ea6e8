import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid, RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { listService, listServices, orderByProximity } from '../registry/queries.js';
import { renewalIntervalMs } from '../registry/lease-terms.js';
import { durableWrite } from './durable-write.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import {
  parseCount,
  parseDuration,
  parseGroupFilter,
  parseInstanceId,
  parseName,
  parseNamespace,
  parseRegistration,
  parseStatus,
} from '../registry/validate.js';
import { toInstanceView } from '../registry/view.js';

/** How long a long poll waits when it gives no `wait`. */
const DEFAULT_WAIT_MS = 30_000;

type Query = Record<string, string | undefined>;
type InstanceParams = { service: string; id: string };

function namespaceOf(request: FastifyRequest): string {
  return parseNamespace((request.query as Query).namespace);
}

function instanceKey(request: FastifyRequest): InstanceKey {
  const params = request.params as InstanceParams;
  return {
    namespace: namespaceOf(request),
    service: parseName('service', params.service),
    instanceId: parseInstanceId('id', params.id),
  };
}

/** The native client API under `/v1` (see docs/api.md). */
export async function clientRoutes(app: FastifyInstance, options: { node: RegistryNode }): Promise<void> {
  const { node } = options;
  const { registry } = node;
  const { limits, cluster } = node.config;
  const view = () => registry.leaseView();
  /** The instance with how often its client should heartbeat. */
  const withInterval = (entry: StoredInstance) => ({
    ...toInstanceView(entry, view()),
    heartbeatIntervalMs: renewalIntervalMs(entry.record, cluster.heartbeatIntervalMs),
  });
  const durably = <T>(write: () => T, refuseWhenFailed = true) => durableWrite(node.durability, write, refuseWhenFailed);

  app.post('/v1/instances', async (request, reply) => {
    const body = request.body as Record<string, unknown> | undefined;
    const queryNamespace = (request.query as Query).namespace;
    const bodyNamespace = typeof body === 'object' && body !== null ? body.namespace : undefined;
    if (queryNamespace !== undefined && bodyNamespace !== undefined && queryNamespace !== bodyNamespace) {
      throw new RegistryError(
        'REG_ERR_NAMESPACE_MISMATCH',
        `namespace: the body says ${JSON.stringify(bodyNamespace)} but the query says ${JSON.stringify(queryNamespace)}`,
      );
    }
    const namespace = parseNamespace(queryNamespace ?? bodyNamespace);
    const input = parseRegistration(body, namespace, limits, cluster);
    const { entry, created } = await durably(() => registry.register(input));
    return reply.code(created ? 201 : 200).send(withInterval(entry));
  });

  app.put('/v1/services/:service/instances/:id/heartbeat', async (request) => {
    const key = instanceKey(request);
    return withInterval(await durably(() => registry.heartbeat(key), false));
  });

  app.put('/v1/services/:service/instances/:id/status', async (request) => {
    const key = instanceKey(request);
    const body = request.body as Record<string, unknown> | undefined;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new RegistryError('REG_ERR_VALIDATION', 'body: must be a JSON object {"status": ...}');
    }
    const status = parseStatus('status', body.status);
    return toInstanceView(await durably(() => registry.update(key, { status })), view());
  });

  app.delete('/v1/services/:service/instances/:id', async (request) => {
    const key = instanceKey(request);
    const entry = await durably(() => registry.cancel(key));
    const { namespace, service, instanceId, version } = entry.record;
    return { namespace, service, instanceId, version, cancelled: true };
  });

  app.get('/v1/services/:service/instances/:id', async (request) => {
    const key = instanceKey(request);
    const entry = registry.find(key);
    if (!entry || entry.hidden) {
      throw new RegistryError('REG_ERR_INSTANCE_NOT_FOUND', `instance ${key.instanceId} of service ${key.service} is not registered`);
    }
    return toInstanceView(entry, view());
  });

  app.get('/v1/services/:service', async (request, reply) => {
    const namespace = namespaceOf(request);
    const service = parseName('service', (request.params as { service: string }).service);
    const query = request.query as Query;
    if (query.status !== undefined && query.status !== 'all' && query.status !== 'up') {
      throw new RegistryError('REG_ERR_VALIDATION', 'status: must be "all" or "up"');
    }
    const group = parseGroupFilter(query.group);
    if (query.index !== undefined) {
      // Long poll: answer as soon as the service's revision passes `index`, or after `wait`.
      const index = parseCount('index', query.index);
      const waitMs = Math.min(query.wait === undefined ? DEFAULT_WAIT_MS : parseDuration('wait', query.wait), cluster.longPollMaxWaitMs);
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      await node.watch.waitForChange(namespace, service, index, waitMs, abort.signal);
    }
    const threshold = node.config.services[`${namespace}/${service}`]?.protectThresholdRatio ?? cluster.protectThresholdRatio;
    const listing = listService(registry.store, namespace, service, view(), query.status === 'all', threshold, group);
    reply.header('X-Registry-Index', String(listing.revision));
    if (query.near === undefined) return listing;
    if (query.near.length === 0 || query.near.length > 64) throw invalid('near', 'must be a zone name of 1 to 64 characters');
    return { ...listing, near: query.near, instances: orderByProximity(listing.instances, query.near, node.regionOfZone) };
  });

  app.get('/v1/services', async (request, reply) => {
    const namespace = namespaceOf(request);
    const group = parseGroupFilter((request.query as Query).group);
    const revision = registry.store.revision;
    reply.header('X-Registry-Index', String(revision));
    return { namespace, revision, services: listServices(registry.store, namespace, view(), group) };
  });
}
