import type { FastifyInstance } from 'fastify';
import { serve, type RouteDefinition } from '../http/route-definition.js';
import type { RegistryReads } from '../app/reads.js';
import type { BlockingQueries } from './blocking.js';
import { namespaceOf, limitSubjectOf } from './guard.js';
import { CONSUL_ROUTES } from './route-definitions.js';
import { readsBudget, yieldToLoop } from '../http/loop-budget.js';
import { answerOf, consulAnswer, serviceEncoding, type ConsulAnswer, type ServiceRead } from './encodings.js';
import { serviceTags } from './service-tags.js';
import {
  holdBlockingQuery,
  instanceFilter,
  knownDatacenters,
  sendConsulAnswer,
  serviceName,
  type BlockingSettings,
  type ConsulPeer,
} from './query.js';

export interface ReadRouteOptions {
  peer: ConsulPeer;
  reads: Pick<RegistryReads, 'views' | 'regionOfZone'>;
  blocking: BlockingQueries;
  settings: BlockingSettings;
  /** Write answers to the socket directly (no per-request debug line is owed): sendConsulAnswer. */
  directAnswers: boolean;
}

type Query = Record<string, unknown>;

/**
 * Consul's catalog and health reads, answered from the read layer (`reads.views`): each
 * service's Consul encoding is built once per change and shared (encodings.ts); blocking
 * queries wait on one service (or, for the service list, on the namespace).
 */
export async function readRoutes(app: FastifyInstance, options: ReadRouteOptions): Promise<void> {
  const { peer, reads, blocking, settings, directAnswers } = options;
  const { views } = reads;
  const context = { blocking, settings };
  const { indexes } = blocking;
  const localDatacenter = peer.config.self.region;
  const regionOfZone = (zone: string) => reads.regionOfZone(zone);

  /** A service read: authorize, block if asked, then send the answer shared by every reader of the view, filter and index. */
  const serviceRead = (definition: RouteDefinition, withPassing: boolean, read: ServiceRead) =>
    serve(app, definition, async (request, reply) => {
      const namespace = namespaceOf(request);
      const service = serviceName((request.params as { name: string }).name);
      const filter = instanceFilter(peer, request.query as Query, withPassing);
      await holdBlockingQuery(request, reply, context, { namespace, service, subject: limitSubjectOf(request) }, () => indexes.service(namespace, service));
      // The index is read with the view the encoding is taken from (serviceEncoding takes it at once).
      const index = indexes.service(namespace, service);
      const encoding = await serviceEncoding(views, namespace, service, localDatacenter);
      return sendConsulAnswer(reply, answerOf(encoding, read, filter, index, regionOfZone), directAnswers);
    });

  serviceRead(CONSUL_ROUTES.catalogService, false, 'catalog');
  serviceRead(CONSUL_ROUTES.healthService, true, 'health');
  serviceRead(CONSUL_ROUTES.healthChecks, false, 'checks');

  /**
   * The service list of a namespace (and `dc`) at the index it was gathered under, shared by
   * every reader that comes while that index is current (each query a change wakes): gathered
   * once per change, not once per woken query. One entry per namespace and datacenter.
   */
  const catalogs = new Map<string, { index: number; answer: Promise<ConsulAnswer> }>();
  const gatherCatalog = async (namespace: string, datacenter: string | null, index: number): Promise<ConsulAnswer> => {
    const services: Record<string, readonly string[]> = {};
    for (const service of views.servicesOf(namespace)) {
      if (readsBudget.spent()) await yieldToLoop();
      const tags = serviceTags(views, regionOfZone, localDatacenter, namespace, service);
      const kept = datacenter === null ? (tags.instances > 0 ? tags.all : undefined) : tags.byDatacenter.get(datacenter);
      if (kept) services[tags.service] = kept;
    }
    return consulAnswer(index, Buffer.from(JSON.stringify(services)));
  };

  serve(app, CONSUL_ROUTES.catalogServices, async (request, reply) => {
    const namespace = namespaceOf(request);
    const filter = instanceFilter(peer, request.query as Query, false);
    await holdBlockingQuery(request, reply, context, { namespace, service: null, subject: limitSubjectOf(request) }, () => indexes.catalog(namespace));
    // The index is read before gathering, which yields: a change made meanwhile is past it, so
    // a blocking query made with this index wakes for it.
    const index = indexes.catalog(namespace);
    const key = `${namespace}/${filter.datacenter ?? ''}`;
    let kept = catalogs.get(key);
    if (kept?.index !== index) {
      kept = { index, answer: gatherCatalog(namespace, filter.datacenter, index) };
      catalogs.set(key, kept);
      // A failed gathering is not kept: the next read gathers again.
      kept.answer.catch(() => catalogs.get(key) === kept && catalogs.delete(key));
    }
    return sendConsulAnswer(reply, await kept.answer, directAnswers);
  });

  serve(app, CONSUL_ROUTES.catalogDatacenters, async (_request, reply) => {
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(knownDatacenters(peer)));
  });
}
