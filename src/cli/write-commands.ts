import { setTimeout as sleep } from 'node:timers/promises';
import type { InstanceView } from '../registry/view.js';
import { plural } from '../ui/words.js';
import { CliError, EXIT_PEER, usageError, type PeerClient } from './client.js';
import { duration, print, printJson, table } from './format.js';
import { Interrupt } from './interrupt.js';
import { bar, Progress } from './progress.js';

export interface RegisterOptions {
  id?: string;
  status?: string;
  zone?: string;
  group?: string;
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
    ...(options.group === undefined ? {} : { group: options.group }),
    ...(options.weight === undefined ? {} : { weight: options.weight }),
    ...(Object.keys(options.metadata).length === 0 ? {} : { metadata: options.metadata }),
    ...(options.leaseMs === undefined ? {} : { leaseDurationMs: options.leaseMs }),
  };
}

/**
 * Runs `work(i)` for i in 0..count-1 with at most `concurrency` at once; reports each
 * completion. Once `stop` is aborted no new work starts (what is in flight finishes).
 */
async function pool(count: number, concurrency: number, work: (index: number) => Promise<void>, onDone: (done: number) => void, stop?: AbortSignal): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < count && !stop?.aborted) {
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
  // With --heartbeat, Ctrl-C cancels what was registered (even during the bulk load).
  const interrupt = options.heartbeat ? new Interrupt() : undefined;
  try {
    await registerAll(client, service, host, port, options, interrupt?.signal);
  } finally {
    interrupt?.dispose();
  }
}

async function registerAll(client: PeerClient, service: string, host: string, port: number, options: RegisterOptions, stop: AbortSignal | undefined): Promise<void> {
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
    stop,
  );
  const seconds = (Date.now() - startedMs) / 1_000;
  if (bulk) {
    const rate = Math.round(registered.length / Math.max(seconds, 0.001));
    progress.done(`registered ${registered.length}/${plural(options.count, 'instance')} of ${service} in ${duration(seconds * 1_000)} (${rate}/s)`);
    if (options.json) printJson({ service, registered: registered.length, failed: failures.length, seconds });
    for (const failure of failures.slice(0, 5)) process.stderr.write(`registry: ${failure}\n`);
  } else if (registered.length > 0) {
    const instance = registered[0]!;
    if (options.json) printJson(instance);
    else print(table(['instance', 'address', 'status', 'owner', 'heartbeat every'], [[instance.instanceId, `${instance.host}:${instance.port}`, instance.status, instance.owner, duration(instance.heartbeatIntervalMs)]]));
  }
  const failed = failures.length > 0 ? new CliError(`${failures.length} of ${options.count} registrations failed`, EXIT_PEER) : undefined;
  if (!stop) {
    if (failed) throw failed;
    return;
  }
  // --heartbeat: keep them alive until Ctrl-C (not when some failed), then cancel them.
  if (!failed && !stop.aborted) await heartbeatUntilStopped(client, service, host, port, options, registered, stop);
  await cancelAll(client, service, registered, options.concurrency);
  if (failed) throw failed;
}

/**
 * Heartbeats every registered instance at the interval the peer asked for, until `stop`
 * (Ctrl-C or SIGTERM) is aborted, which ends the wait at once; registers an instance again
 * when the peer answers 404 (as real clients do).
 */
async function heartbeatUntilStopped(client: PeerClient, service: string, host: string, port: number, options: RegisterOptions, instances: Registered[], stop: AbortSignal): Promise<void> {
  const intervalMs = Math.min(...instances.map((instance) => instance.heartbeatIntervalMs));
  process.stderr.write(`heartbeating ${plural(instances.length, 'instance')} every ${duration(intervalMs)}; Ctrl-C to cancel them and stop\n`);
  while (!stop.aborted) {
    await sleep(intervalMs, undefined, { signal: stop }).catch(() => undefined);
    if (stop.aborted) break;
    await pool(instances.length, options.concurrency, async (index) => {
      const instance = instances[index]!;
      const path = `/v1/services/${encodeURIComponent(service)}/instances/${encodeURIComponent(instance.instanceId)}/heartbeat`;
      try {
        const answer = await client.call('PUT', path, { accept: [404] });
        if (answer.status === 404) await client.call('POST', '/v1/instances', { body: registrationBody(service, host, port, options, instance.port - port) });
      } catch (error) {
        process.stderr.write(`registry: ${(error as Error).message}\n`);
      }
    }, () => undefined, stop);
  }
}

/**
 * Cancels the instances `register --heartbeat` registered, once it is told to stop, with a
 * progress line: they leave the registry now rather than when their leases run out. One
 * already gone (404) counts as cancelled. A second Ctrl-C meanwhile exits at once (interrupt.ts).
 */
async function cancelAll(client: PeerClient, service: string, instances: Registered[], concurrency: number): Promise<void> {
  const progress = new Progress();
  const failures: string[] = [];
  let cancelled = 0;
  progress.update(`cancelling ${service} ${bar(0, instances.length)}`, true);
  await pool(
    instances.length,
    concurrency,
    async (index) => {
      const path = `/v1/services/${encodeURIComponent(service)}/instances/${encodeURIComponent(instances[index]!.instanceId)}`;
      try {
        await client.call('DELETE', path, { accept: [404] });
        cancelled += 1;
      } catch (error) {
        failures.push((error as Error).message);
      }
    },
    (done) => progress.update(`cancelling ${service} ${bar(done, instances.length)}`),
  );
  progress.done(`cancelled ${cancelled}/${plural(instances.length, 'instance')} of ${service}`);
  for (const failure of failures.slice(0, 5)) process.stderr.write(`registry: ${failure}\n`);
  if (failures.length > 0) throw new CliError(`${failures.length} of ${instances.length} cancels failed; those instances expire with their leases`, EXIT_PEER);
}

/** `registry cancel SERVICE ID`. */
export async function cancelCommand(client: PeerClient, service: string, instanceId: string, options: { json?: boolean }): Promise<void> {
  const answer = await client.call<Record<string, unknown>>('DELETE', `/v1/services/${encodeURIComponent(service)}/instances/${encodeURIComponent(instanceId)}`);
  if (options.json) printJson(answer.body);
  else print(`cancelled ${instanceId} of ${service}`);
}
