import type { InstanceView } from '../registry/view.js';
import { CliError, EXIT_PEER, usageError, type PeerClient } from './client.js';
import { duration, print, printJson, table } from './format.js';
import { bar, Progress } from './progress.js';

export interface RegisterOptions {
  id?: string;
  status?: string;
  zone?: string;
  weight?: number;
  metadata: Record<string, string>;
  leaseMs?: number;
  /** Register this many instances (ports `port`..`port+count-1`), with progress. */
  count: number;
  /** Requests in flight at once during a bulk load. */
  concurrency: number;
  /** Keep heartbeating every registered instance until Ctrl-C. */
  heartbeat: boolean;
  json?: boolean;
}

type Registered = InstanceView & { heartbeatIntervalMs: number };

/** The register body of the `index`-th instance of a bulk load (the only one when count is 1). */
export function registrationBody(service: string, host: string, port: number, options: RegisterOptions, index: number): Record<string, unknown> {
  const bulk = options.count > 1;
  return {
    service,
    host,
    port: port + index,
    ...(options.id === undefined ? {} : { instanceId: bulk ? `${options.id}-${index}` : options.id }),
    ...(options.status === undefined ? {} : { status: options.status }),
    ...(options.zone === undefined ? {} : { zone: options.zone }),
    ...(options.weight === undefined ? {} : { weight: options.weight }),
    ...(Object.keys(options.metadata).length === 0 ? {} : { metadata: options.metadata }),
    ...(options.leaseMs === undefined ? {} : { leaseDurationMs: options.leaseMs }),
  };
}

/** Runs `work(i)` for i in 0..count-1 with at most `concurrency` at once; reports each completion. */
async function pool(count: number, concurrency: number, work: (index: number) => Promise<void>, onDone: (done: number) => void): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await work(index);
      onDone(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** `registry register SERVICE HOST PORT`: one instance, or `--count N` of them with progress. */
export async function registerCommand(client: PeerClient, service: string, host: string, port: number, options: RegisterOptions): Promise<void> {
  if (port + options.count - 1 > 65535) throw usageError(`--count: ports ${port}..${port + options.count - 1} pass 65535`);
  const progress = new Progress();
  const startedMs = Date.now();
  const registered: Registered[] = [];
  const failures: string[] = [];
  const bulk = options.count > 1;
  await pool(
    options.count,
    options.concurrency,
    async (index) => {
      try {
        const answer = await client.call<Registered>('POST', '/v1/instances', { body: registrationBody(service, host, port, options, index) });
        registered.push(answer.body);
      } catch (error) {
        // One bad answer must not stop a bulk load; the first ones are reported at the end.
        if (!bulk) throw error;
        failures.push((error as Error).message);
      }
    },
    (done) => bulk && progress.update(`registering ${service} ${bar(done, options.count)} ${duration(Date.now() - startedMs)}`),
  );
  const seconds = (Date.now() - startedMs) / 1_000;
  if (bulk) {
    const rate = Math.round(registered.length / Math.max(seconds, 0.001));
    progress.done(`registered ${registered.length}/${options.count} instances of ${service} in ${duration(seconds * 1_000)} (${rate}/s)`);
    if (options.json) printJson({ service, registered: registered.length, failed: failures.length, seconds });
    for (const failure of failures.slice(0, 5)) process.stderr.write(`registry: ${failure}\n`);
    if (failures.length > 0) throw new CliError(`${failures.length} of ${options.count} registrations failed`, EXIT_PEER);
  } else {
    const instance = registered[0]!;
    if (options.json) printJson(instance);
    else print(table(['instance', 'address', 'status', 'owner', 'heartbeat every'], [[instance.instanceId, `${instance.host}:${instance.port}`, instance.status, instance.owner, duration(instance.heartbeatIntervalMs)]]));
  }
  if (options.heartbeat) await heartbeatUntilStopped(client, service, host, port, options, registered);
}

/**
 * Heartbeats every registered instance at the interval the peer asked for, until SIGINT or
 * SIGTERM; registers an instance again when the peer answers 404 (as real clients do).
 */
async function heartbeatUntilStopped(client: PeerClient, service: string, host: string, port: number, options: RegisterOptions, instances: Registered[]): Promise<void> {
  const intervalMs = Math.min(...instances.map((instance) => instance.heartbeatIntervalMs));
  process.stderr.write(`heartbeating ${instances.length} instance(s) every ${duration(intervalMs)}; Ctrl-C to stop\n`);
  let stopped = false;
  const stop = () => (stopped = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  while (!stopped) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    if (stopped) break;
    await pool(instances.length, options.concurrency, async (index) => {
      const instance = instances[index]!;
      const path = `/v1/services/${encodeURIComponent(service)}/instances/${encodeURIComponent(instance.instanceId)}/heartbeat`;
      try {
        const answer = await client.call('PUT', path, { accept: [404] });
        if (answer.status === 404) await client.call('POST', '/v1/instances', { body: registrationBody(service, host, port, options, instance.port - port) });
      } catch (error) {
        process.stderr.write(`registry: ${(error as Error).message}\n`);
      }
    }, () => undefined);
  }
}

/** `registry cancel SERVICE ID`. */
export async function cancelCommand(client: PeerClient, service: string, instanceId: string, options: { json?: boolean }): Promise<void> {
  const answer = await client.call<Record<string, unknown>>('DELETE', `/v1/services/${encodeURIComponent(service)}/instances/${encodeURIComponent(instanceId)}`);
  if (options.json) printJson(answer.body);
  else print(`cancelled ${instanceId} of ${service}`);
}
