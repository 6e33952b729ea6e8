import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RegistryConfig } from '../config/load.js';
import type { RegistryReads } from '../app/reads.js';
import { serviceIdentity } from '../registry/types.js';
import { andThen } from '../app/durable-write.js';
import { readsBudget, yieldToLoop } from '../http/loop-budget.js';
import { serve } from '../http/route-definition.js';
import { sendChunks, type ChunkedBody } from '../http/send-chunks.js';
import { toInstanceView } from '../registry/view.js';
import type { CheckChange } from './check-update.js';
import { badRequest, ConsulError } from './errors.js';
import { CHECK_STATUSES, checksOf, type CheckStatus } from './fields.js';
import { namespaceOf } from './guard.js';
import type { ConsulDirectory } from './directory.js';
import { findByCheckId, findByServiceId, findConsulService, keyOf, type InstanceFinder } from './lookup.js';
import { agentService, consulInstance, type ConsulInstance } from './payloads.js';
import { refuseFilterExpression } from './query.js';
import { CONSUL_ROUTES } from './route-definitions.js';
import { field, parseConsulRegistration } from './register-body.js';
import { unknownCheck, type ConsulWrites } from './writes.js';

export interface AgentRouteOptions {
  config: Pick<RegistryConfig, 'limits' | 'cluster' | 'self'>;
  /** The application layer's reads (instances, lease rules and the read layer's views). */
  reads: InstanceFinder & Pick<RegistryReads, 'leaseView'>;
  writes: ConsulWrites;
  /** Consul service and check IDs to the instances they name (directory.ts). */
  directory: ConsulDirectory;
}

type Query = Record<string, unknown>;

/** Instances (or entries of the answer) between two looks at the loop budget. */
const OWN_CHECK_EVERY = 200;

function unknownService(id: string): ConsulError {
  return new ConsulError(404, `Unknown service ID "${id.slice(0, 256)}". Ensure that the service ID is passed, not the service name.`);
}

/**
 * Consul's agent routes. The peer plays the agent: it takes registrations and TTL check
 * updates, and lists as "its" services the instances whose lease it holds (the ones registered
 * or renewed here). Writes answer 200 with an empty body, as Consul does. Deregister and the
 * pass/warn/fail routes also take GET, which Consul accepted before 1.0 and python-consul
 * 0.7 (Debian's) still sends, only with `consul.allowGetWrites` (the guard answers 405 otherwise).
 */
export async function agentRoutes(app: FastifyInstance, options: AgentRouteOptions): Promise<void> {
  const { config, reads, writes, directory } = options;
  const { limits, cluster } = config;
  const localDatacenter = config.self.region;

  serve(app, CONSUL_ROUTES.register, (request, reply) => {
    const namespace = namespaceOf(request);
    const body = request.body;
    const id = typeof body === 'object' && body !== null ? field(body as Record<string, unknown>, 'ID') ?? field(body as Record<string, unknown>, 'Name') : undefined;
    // Only an instance this API registered with the ID is replaced or moved, never another service's instance of that id.
    const previous = typeof id === 'string' ? findConsulService(reads, directory, namespace, id) : undefined;
    const { input } = parseConsulRegistration(body, {
      namespace,
      clientAddress: request.ip,
      zone: config.self.zone,
      limits,
      bounds: cluster,
      previousChecks: previous ? checksOf(previous.record.data) : [],
    });
    // An ID already registered under another name moves: Consul's IDs are unique on an agent.
    const moved = previous && serviceIdentity(previous.record.service) !== serviceIdentity(input.service) ? writes.deregister(keyOf(previous)) : undefined;
    return andThen(moved ?? null, () => andThen(writes.register(input), () => reply.code(200).send()));
  });

  const deregister = async (request: FastifyRequest) => {
    const namespace = namespaceOf(request);
    const id = (request.params as { id: string }).id;
    const entry = await findByServiceId(reads, directory, namespace, id);
    if (!entry) throw unknownService(id);
    return andThen(writes.deregister(keyOf(entry)), () => null);
  };
  for (const definition of [CONSUL_ROUTES.deregister, CONSUL_ROUTES.deregisterGet]) {
    serve(app, definition, async (request, reply) => {
      await deregister(request);
      return reply.code(200).send();
    });
  }

  /**
   * An object of the agent's own instances, `{"<key>":<JSON>,...}`, with the entries `entriesOf`
   * gives for each: the served instances of the namespace whose lease this peer holds. A Consul
   * agent lists its host's services, fresh on every read, so this is built per request, for
   * this peer's own instances only. A peer may hold many leases (a 100,000-instance answer is
   * 23 MB): the build looks at the shared loop budget as it goes, the body is made in slices
   * of bytes, and it is sent paced (sendChunks), so that no heartbeat waits for all of it.
   * A key met twice keeps its first place and its last value, as an object's would.
   */
  const ownObject = async (namespace: string, entriesOf: (instance: ConsulInstance) => Iterable<readonly [string, string]>): Promise<ChunkedBody> => {
    const texts = new Map<string, string>();
    let leases = reads.leaseView();
    for (const service of reads.views.servicesOf(namespace)) {
      const { served } = reads.views.stable(namespace, service, leases);
      for (let i = 0; i < served.length; i++) {
        if (i % OWN_CHECK_EVERY === 0 && readsBudget.spent()) {
          await yieldToLoop();
          leases = reads.leaseView();
        }
        const entry = served[i]!;
        if (entry.record.owner !== config.self.id) continue;
        for (const [key, json] of entriesOf(consulInstance(entry, toInstanceView(entry, leases), localDatacenter))) texts.set(key, json);
      }
    }
    const chunks: Buffer[] = [];
    let text = '{';
    let count = 0;
    for (const [key, json] of texts) {
      text += `${count === 0 ? '' : ','}${JSON.stringify(key)}:${json}`;
      if (++count % OWN_CHECK_EVERY === 0) {
        chunks.push(Buffer.from(text));
        text = '';
        if (readsBudget.spent()) await yieldToLoop();
      }
    }
    chunks.push(Buffer.from(`${text}}`));
    return { chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
  };

  serve(app, CONSUL_ROUTES.agentServices, async (request, reply) => {
    const namespace = namespaceOf(request);
    refuseFilterExpression(request.query as Query);
    const body = await ownObject(namespace, (instance) => [[instance.id, JSON.stringify(agentService(instance))]]);
    return sendChunks(reply, body, 'application/json; charset=utf-8');
  });

  serve(app, CONSUL_ROUTES.agentChecks, async (request, reply) => {
    const namespace = namespaceOf(request);
    const body = await ownObject(namespace, (instance) => instance.checks.map((check) => [check.CheckID, JSON.stringify(check)] as const));
    return sendChunks(reply, body, 'application/json; charset=utf-8');
  });

  serve(app, CONSUL_ROUTES.agentService, async (request, reply) => {
    const namespace = namespaceOf(request);
    const id = (request.params as { id: string }).id;
    const entry = await findByServiceId(reads, directory, namespace, id);
    if (!entry) throw unknownService(id);
    const view = reads.views.get(namespace, entry.record.service);
    const index = view.served.indexOf(entry);
    if (index < 0) throw unknownService(id);
    const instance = consulInstance(entry, view.instances[index]!, localDatacenter);
    return reply.type('application/json; charset=utf-8').send(JSON.stringify({ ...agentService(instance), ContentHash: entry.record.version }));
  });

  const checkUpdate = (request: FastifyRequest, change: CheckChange) => {
    const namespace = namespaceOf(request);
    const checkId = (request.params as { check_id: string }).check_id;
    const entry = findByCheckId(reads, directory, namespace, checkId);
    if (!entry) throw unknownCheck(checkId);
    return writes.updateCheck(keyOf(entry), checkId, change);
  };

  const verbs = [
    ['passing', [CONSUL_ROUTES.checkPass, CONSUL_ROUTES.checkPassGet]],
    ['warning', [CONSUL_ROUTES.checkWarn, CONSUL_ROUTES.checkWarnGet]],
    ['critical', [CONSUL_ROUTES.checkFail, CONSUL_ROUTES.checkFailGet]],
  ] as const;
  for (const [status, definitions] of verbs) {
    const handler = (request: FastifyRequest, reply: FastifyReply) => {
      const note = (request.query as Query).note;
      if (note !== undefined && typeof note !== 'string') throw badRequest('note: must be given once');
      return andThen(checkUpdate(request, { status, output: note }), () => reply.code(200).send());
    };
    for (const definition of definitions) serve(app, definition, handler);
  }

  serve(app, CONSUL_ROUTES.checkUpdate, (request, reply) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request decode failed: the body must be {"Status": ..., "Output": ...}');
    const status = field(body as Record<string, unknown>, 'Status');
    const output = field(body as Record<string, unknown>, 'Output');
    if (!CHECK_STATUSES.includes(status as CheckStatus)) throw badRequest('Status: must be passing, warning or critical');
    if (output !== undefined && output !== null && typeof output !== 'string') throw badRequest('Output: must be a string');
    return andThen(checkUpdate(request, { status: status as CheckStatus, output: (output as string | null | undefined) ?? undefined }), () => reply.code(200).send());
  });
}
