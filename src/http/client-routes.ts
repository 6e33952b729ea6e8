import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { listService, listServices } from '../registry/queries.js';
import type { InstanceKey } from '../registry/types.js';
import { parseInstanceId, parseName, parseNamespace, parseRegistration, parseStatus } from '../registry/validate.js';
import { toInstanceView } from '../registry/view.js';

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
  const heartbeatIntervalMs = cluster.heartbeatIntervalMs;
  const view = () => registry.leaseView();
  const { durability } = node;

  /**
   * Runs a registry write and returns once it is durable under the sync policy, so the answer
   * never acknowledges a write the data dir does not hold. `refuseWhenFailed` answers
   * REG_ERR_STORAGE before touching the store while the data dir refuses writes (heartbeats
   * skip it: they only renew a lease, unless they take an instance over).
   */
  async function durably<T>(write: () => T, refuseWhenFailed = true): Promise<T> {
    if (refuseWhenFailed) durability.assertWritable();
    const mark = durability.mark();
    const result = write();
    await durability.barrier(mark);
    return result;
  }

  // Until the data dir is loaded the store is incomplete: a heartbeat would get a false 404.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (durability.restored) done();
    else done(new RegistryError('REG_ERR_NOT_READY', 'the peer is still loading its data dir'));
  });

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
    return reply.code(created ? 201 : 200).send({ ...toInstanceView(entry, view()), heartbeatIntervalMs });
  });

  app.put('/v1/services/:service/instances/:id/heartbeat', async (request) => {
    const key = instanceKey(request);
    const entry = await durably(() => registry.heartbeat(key), false);
    return { ...toInstanceView(entry, view()), heartbeatIntervalMs };
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
    const listing = listService(registry.store, namespace, service, view(), query.status === 'all');
    reply.header('X-Registry-Index', String(listing.revision));
    return listing;
  });

  app.get('/v1/services', async (request, reply) => {
    const namespace = namespaceOf(request);
    const revision = registry.store.revision;
    reply.header('X-Registry-Index', String(revision));
    return { namespace, revision, services: listServices(registry.store, namespace, view()) };
  });
}
