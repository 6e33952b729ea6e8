/**
 * Notification latency of the watch stream (GET /v1/watch?services=..., server-sent events: a
 * `snapshot` event per service, then `delta` events {namespace, service, revision, added,
 * removed, changed}) with 1,000 subscribers on one peer: the time from sending a register to
 * each subscriber receiving the delta that names it. The reference, in the same run, is the
 * register's own round trip. When the peer has no watch endpoint (404), the section says so
 * and measures nothing.
 */
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'undici';
import { loopbackOnly, percentile, pool, progress, round, send, sleep } from './lib.js';
import { startPeer } from './processes.js';
import { idsInDelta, SseParser, type WatchDelta } from './sse-client.js';

export interface SseResult {
  measured: boolean;
  reason?: string;
  subscribers?: number;
  writes?: number;
  delivered?: number;
  expected?: number;
  /** Write sent to delta received, over every (write, subscriber) pair. */
  notifyP50Ms?: number;
  notifyP99Ms?: number;
  /** Write sent to the last subscriber's delta, over the writes. */
  allNotifiedP50Ms?: number;
  allNotifiedP99Ms?: number;
  /** The reference: the register's own round trip. */
  writeAckP50Ms?: number;
  writeAckP99Ms?: number;
}

const SERVICE = 'sse-bench';
const WRITE_SPACING_MS = 300;

/** Starts a peer and measures its watch stream. */
export async function benchSse(options: { quick: boolean; subscribers?: number }): Promise<SseResult> {
  const peer = await startPeer('sse-peer', { pinned: false, logLevel: 'warn' });
  try {
    return await measureWatchLatency(peer.url, { subscribers: options.subscribers ?? 1_000, writes: options.quick ? 10 : 30 });
  } finally {
    await peer.stop();
  }
}

/**
 * Measures the watch stream of the registry at `url` (any server speaking the watch contract).
 * Progress goes to `options.report` (the benchmark's progress lines by default; tests collect
 * it instead of printing it).
 */
export async function measureWatchLatency(url: string, options: { subscribers: number; writes: number; report?: (line: string) => void }): Promise<SseResult> {
  const { subscribers, writes } = options;
  const report = options.report ?? progress;
  const notMeasured = (reason: string): SseResult => {
    report(`sse: not measured (${reason})`);
    return { measured: false, reason };
  };
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: subscribers + 10 });
  const aborter = new AbortController();
  // Every subscriber's request listens on this one signal.
  setMaxListeners(subscribers + 10, aborter.signal);
  try {
    const watchUrl = `${loopbackOnly(url)}/v1/watch?services=${SERVICE}`;
    const probe = await request(watchUrl, { headers: { accept: 'text/event-stream' }, signal: AbortSignal.timeout(3_000) }).catch((error: Error) => error);
    if (probe instanceof Error) return notMeasured(`GET /v1/watch failed: ${probe.message}`);
    const contentType = String(probe.headers['content-type'] ?? '');
    if (probe.statusCode !== 200 || !contentType.startsWith('text/event-stream')) {
      const text = await probe.body.text().catch(() => '');
      return notMeasured(`this build has no watch endpoint: GET /v1/watch answered ${probe.statusCode} ${text.slice(0, 120)}`);
    }
    probe.body.destroy();
    report(`sse: ${subscribers} subscribers to ${SERVICE}, ${writes} registers ${WRITE_SPACING_MS} ms apart`);

    const sentAt = new Map<string, number>();
    const arrivals = new Map<string, number[]>();
    let snapshots = 0;
    const subscribe = async () => {
      const response = await request(watchUrl, { dispatcher: agent, headers: { accept: 'text/event-stream' }, signal: aborter.signal });
      if (response.statusCode !== 200) throw new Error(`watch answered ${response.statusCode}`);
      const parser = new SseParser();
      let snapshotSeen = false;
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) {
        const now = performance.now();
        for (const event of parser.push(chunk as string)) {
          if (event.event === 'snapshot' && !snapshotSeen) {
            snapshotSeen = true;
            snapshots += 1;
          } else if (event.event === 'delta') {
            for (const id of idsInDelta(JSON.parse(event.data) as WatchDelta)) {
              if (sentAt.has(id)) arrivals.get(id)!.push(now - sentAt.get(id)!);
            }
          }
        }
      }
    };
    const streams = Array.from({ length: subscribers }, () => subscribe().catch(() => undefined));
    const connectDeadline = performance.now() + 30_000;
    while (snapshots < subscribers && performance.now() < connectDeadline) await sleep(50);
    if (snapshots < subscribers) return notMeasured(`only ${snapshots} of ${subscribers} subscribers got their snapshot within 30 s`);

    const writer = pool(url, 4);
    const acks: number[] = [];
    for (let w = 0; w < writes; w++) {
      const id = `w-${w}`;
      arrivals.set(id, []);
      const t0 = performance.now();
      sentAt.set(id, t0);
      const answer = await send(writer, { method: 'POST', path: '/v1/instances', body: { service: SERVICE, instanceId: id, host: '10.0.0.9', port: 1 + w, leaseDurationMs: 600_000 } });
      acks.push(performance.now() - t0);
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
      await sleep(WRITE_SPACING_MS);
    }
    const deliveryDeadline = performance.now() + 5_000;
    const delivered = () => [...arrivals.values()].reduce((sum, list) => sum + list.length, 0);
    while (delivered() < writes * subscribers && performance.now() < deliveryDeadline) await sleep(50);
    await writer.close();
    const all = [...arrivals.values()].flat();
    const lastPerWrite = [...arrivals.values()].filter((list) => list.length === subscribers).map((list) => Math.max(...list));
    const result: SseResult = {
      measured: true,
      subscribers,
      writes,
      delivered: all.length,
      expected: writes * subscribers,
      notifyP50Ms: round(percentile(all, 0.5), 1),
      notifyP99Ms: round(percentile(all, 0.99), 1),
      allNotifiedP50Ms: round(percentile(lastPerWrite, 0.5), 1),
      allNotifiedP99Ms: round(percentile(lastPerWrite, 0.99), 1),
      writeAckP50Ms: round(percentile(acks, 0.5), 2),
      writeAckP99Ms: round(percentile(acks, 0.99), 2),
    };
    report(`sse: ${JSON.stringify(result)}`);
    aborter.abort();
    await Promise.all(streams);
    return result;
  } finally {
    aborter.abort();
    await agent.close().catch(() => undefined);
  }
}
