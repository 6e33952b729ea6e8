import { request } from 'undici';
import { sendRetryingEarlyClose } from '../client/early-close.js';
import type { InstanceView } from '../registry/view.js';
import { SseParser } from '../ui/sse-parser.js';
import { plural } from '../ui/words.js';
import { CliError, describeNetworkError, EXIT_PEER, type PeerClient } from './client.js';
import { clockTime, print } from './format.js';

interface Snapshot {
  service: string;
  revision: number;
  instances: InstanceView[];
}

interface Delta {
  service: string;
  revision: number;
  added: InstanceView[];
  changed: InstanceView[];
  removed: { instanceId: string }[];
}

const line = (sign: string, service: string, instance: InstanceView) =>
  `${clockTime(Date.now())}  ${sign} ${service}  ${instance.instanceId}  ${instance.host}:${instance.port}  ${instance.status}${instance.evictionHeld ? ' (held)' : ''}`;

/** The lines a person sees for one event of the stream. */
export function describeEvent(event: string, data: unknown): string[] {
  if (event === 'snapshot') {
    const snapshot = data as Snapshot;
    return [
      `${clockTime(Date.now())}  = ${snapshot.service}: ${plural(snapshot.instances.length, 'instance')} at revision ${snapshot.revision}`,
      ...snapshot.instances.map((instance) => line('=', snapshot.service, instance)),
    ];
  }
  if (event === 'delta') {
    const delta = data as Delta;
    return [
      ...delta.added.map((instance) => line('+', delta.service, instance)),
      ...delta.changed.map((instance) => line('~', delta.service, instance)),
      ...delta.removed.map(({ instanceId }) => `${clockTime(Date.now())}  - ${delta.service}  ${instanceId}`),
    ];
  }
  return [];
}

/**
 * `registry watch [SERVICE]`: prints the changes of a service (or of every service of the
 * namespace) live, from the watch stream, until Ctrl-C (exit 0). `--json` prints each event
 * as one JSON line. A stream the peer ends or drops is an error (exit 1).
 */
export async function watchCommand(client: PeerClient, service: string | undefined, options: { json?: boolean }): Promise<void> {
  const abort = new AbortController();
  let interrupted = false;
  const stop = () => {
    interrupted = true;
    abort.abort();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let response;
  try {
    // A read: lost to the keep-alive race, it is sent again (client/early-close.ts).
    response = await sendRetryingEarlyClose(
      () =>
        request(client.url('/v1/watch', { services: service }), {
          headers: client.headers({ accept: 'text/event-stream' }),
          signal: abort.signal,
          bodyTimeout: 0,
        }),
      abort.signal,
    );
  } catch (error) {
    if (interrupted) return;
    throw new CliError(`cannot reach ${client.baseUrl}: ${describeNetworkError(error)}`, EXIT_PEER);
  }
  if (response.statusCode !== 200) {
    const text = await response.body.text();
    throw new CliError(`GET /v1/watch answered ${response.statusCode} ${text.slice(0, 200)}`, EXIT_PEER);
  }
  if (!options.json) process.stderr.write(`watching ${service ?? 'every service'} on ${client.baseUrl}; Ctrl-C to stop\n`);
  const parser = new SseParser();
  try {
    for await (const chunk of response.body) {
      for (const event of parser.push(chunk.toString('utf8'))) {
        const data = JSON.parse(event.data) as unknown;
        if (event.event === 'dropped') throw new CliError(`the peer dropped this watch: ${(data as { message: string }).message}`, EXIT_PEER);
        if (options.json) print(JSON.stringify({ event: event.event, ...(data as object) }));
        else for (const text of describeEvent(event.event, data)) print(text);
      }
    }
  } catch (error) {
    if (interrupted) return;
    if (error instanceof CliError) throw error;
    throw new CliError(`the watch stream broke: ${describeNetworkError(error)}`, EXIT_PEER);
  }
  if (!interrupted) throw new CliError('the peer ended the watch stream (it is shutting down?)', EXIT_PEER);
}
