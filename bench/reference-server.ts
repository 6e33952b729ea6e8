/**
 * The reference of the single-peer benchmarks: a bare fastify server with the same route shapes
 * as the registry's native API and none of its work (no validation beyond JSON parsing, no
 * versions, leases, replication, change feed or logs): POST registers into a Map, PUT touches
 * a timestamp, GET lists a service. Whatever the registry costs above this is its own.
 *
 *   node --import tsx bench/reference-server.ts PORT      (listens on 127.0.0.1 only)
 */
import Fastify from 'fastify';

interface Instance {
  service: string;
  instanceId: string;
  host: string;
  port: number;
  status: string;
  metadata: Record<string, string>;
  leaseDurationMs: number;
  lastHeartbeatMs: number;
}

const services = new Map<string, Map<string, Instance>>();
const app = Fastify({ logger: false });

app.get('/healthz', async () => ({ status: 'ok' }));

app.post('/v1/instances', async (request, reply) => {
  const body = request.body as Partial<Instance>;
  const service = String(body.service);
  const instanceId = body.instanceId ?? `${body.host}:${body.port}`;
  let instances = services.get(service);
  if (!instances) services.set(service, (instances = new Map()));
  const existed = instances.has(instanceId);
  const instance: Instance = {
    service,
    instanceId,
    host: String(body.host),
    port: Number(body.port),
    status: body.status ?? 'UP',
    metadata: body.metadata ?? {},
    leaseDurationMs: body.leaseDurationMs ?? 30_000,
    lastHeartbeatMs: Date.now(),
  };
  instances.set(instanceId, instance);
  return reply.code(existed ? 200 : 201).send(instance);
});

app.put('/v1/services/:service/instances/:id/heartbeat', async (request, reply) => {
  const { service, id } = request.params as { service: string; id: string };
  const instance = services.get(service)?.get(id);
  if (!instance) return reply.code(404).send({ code: 'NOT_FOUND', message: 'unknown instance' });
  instance.lastHeartbeatMs = Date.now();
  return instance;
});

app.get('/v1/services/:service', async (request) => {
  const { service } = request.params as { service: string };
  return { service, instances: [...(services.get(service)?.values() ?? [])] };
});

await app.listen({ host: '127.0.0.1', port: Number(process.argv[2] ?? 0) });
