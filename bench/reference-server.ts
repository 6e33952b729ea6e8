/**
 * The reference of the single-peer benchmarks: a bare fastify server with the same route shapes
 * as the registry's native API and none of its work (no validation beyond JSON parsing, no
 * versions, leases, replication, change feed or logs): POST registers into a Map, PUT touches
 * a timestamp, GET lists a service. Whatever the registry costs above this is its own.
 *
 * Its answers carry the fields of the peer's answers (the instance view of docs/api.md, and the
 * list's envelope), so they are the same size within a few bytes: what fastify serializes and
 * the socket sends is the same on both sides, and only the work behind it differs (issue 36
 * asks for the register ratio against "the same JSON parse, same Map write, same answer size").
 * `--minimal-answer` answers with the stored fields only (189 bytes for a register of five
 * metadata keys against the peer's 467), as this server did before 2026-12-07, to compare.
 *
 *   node --import tsx bench/reference-server.ts PORT [--minimal-answer]     (listens on 127.0.0.1 only)
 */
import Fastify from 'fastify';

interface Instance {
  service: string;
  instanceId: string;
  host: string;
  port: number;
  securePort: number | null;
  status: string;
  weight: number;
  zone: string;
  metadata: Record<string, string>;
  group: string;
  leaseDurationMs: number;
  lastHeartbeatMs: number;
  registeredAtMs: number;
}

/**
 * A string the size of the peer's version (12 hex digits of time, a counter, the peer's id),
 * the same for every record: the reference keeps no versions, and builds no string for one.
 */
const VERSION = '000000000000.000000.peer-1';

const minimalAnswer = process.argv.includes('--minimal-answer');
const services = new Map<string, Map<string, Instance>>();
const app = Fastify({ logger: false });

/**
 * What the peer answers for one instance: its stored fields and its lease, as docs/api.md names
 * them, one literal; a single instance's answer (register, heartbeat) also names the heartbeat
 * interval, which JSON leaves out of a list's entries, where it is undefined.
 */
function view(instance: Instance, now: number, heartbeatIntervalMs?: number) {
  return {
    namespace: 'default',
    service: instance.service,
    instanceId: instance.instanceId,
    host: instance.host,
    port: instance.port,
    securePort: instance.securePort,
    status: instance.status,
    weight: instance.weight,
    zone: instance.zone,
    metadata: instance.metadata,
    group: instance.group,
    region: null,
    owner: 'peer-1',
    version: VERSION,
    leaseDurationMs: instance.leaseDurationMs,
    leaseExpiresInMs: instance.lastHeartbeatMs + instance.leaseDurationMs - now,
    leaseLive: true,
    evictionHeld: false,
    registeredAtMs: instance.registeredAtMs,
    lastUpdatedAtMs: instance.lastHeartbeatMs,
    heartbeatIntervalMs,
  };
}

/** A single instance's answer (register, heartbeat). */
function answerOf(instance: Instance) {
  return minimalAnswer ? instance : view(instance, Date.now(), 10_000);
}

app.get('/healthz', async () => ({ status: 'ok' }));

app.post('/v1/instances', async (request, reply) => {
  const body = request.body as Partial<Instance>;
  const service = String(body.service);
  const instanceId = body.instanceId ?? `${body.host}:${body.port}`;
  let instances = services.get(service);
  if (!instances) services.set(service, (instances = new Map()));
  const existed = instances.has(instanceId);
  const now = Date.now();
  const instance: Instance = {
    service,
    instanceId,
    host: String(body.host),
    port: Number(body.port),
    securePort: body.securePort ?? null,
    status: body.status ?? 'UP',
    weight: body.weight ?? 1,
    zone: body.zone ?? '',
    metadata: body.metadata ?? {},
    group: body.group ?? 'DEFAULT_GROUP',
    leaseDurationMs: body.leaseDurationMs ?? 30_000,
    lastHeartbeatMs: now,
    registeredAtMs: now,
  };
  instances.set(instanceId, instance);
  return reply.code(existed ? 200 : 201).send(answerOf(instance));
});

app.put('/v1/services/:service/instances/:id/heartbeat', async (request, reply) => {
  const { service, id } = request.params as { service: string; id: string };
  const instance = services.get(service)?.get(id);
  if (!instance) return reply.code(404).send({ code: 'NOT_FOUND', message: 'unknown instance' });
  instance.lastHeartbeatMs = Date.now();
  return answerOf(instance);
});

app.get('/v1/services/:service', async (request) => {
  const { service } = request.params as { service: string };
  const instances = [...(services.get(service)?.values() ?? [])];
  if (minimalAnswer) return { service, instances };
  const now = Date.now();
  return { namespace: 'default', service, revision: 1, protected: false, instances: instances.map((instance) => view(instance, now)) };
});

await app.listen({ host: '127.0.0.1', port: Number(process.argv[2] ?? 0) });
