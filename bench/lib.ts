/**
 * Shared helpers of the benchmark scripts: bounded load loops, percentiles, progress lines,
 * and result files. Every loop here is bounded both in count and in time, and only ever
 * talks to 127.0.0.1.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { Pool, request } from 'undici';

export const quick = process.argv.includes('--quick');

export function progress(message: string): void {
  process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export function percentile(values: number[], quantile: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1)]!;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** A positive number given as `--name=N` on the command line, else `fallback`. */
export function positiveArgument(name: string, fallback: number): number {
  const value = Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Asserts the URL is on the loopback interface before any load is sent to it. */
export function loopbackOnly(url: string): string {
  const host = new URL(url).hostname;
  if (host !== '127.0.0.1' && host !== '[::1]' && host !== 'localhost') {
    throw new Error(`benchmarks only send traffic to 127.0.0.1, not ${host}`);
  }
  return url;
}

export interface JsonCall {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
}

/** One keep-alive pool per target, for load loops. */
export function pool(url: string, connections = 64): Pool {
  return new Pool(loopbackOnly(url), { connections, pipelining: 1 });
}

export async function send(target: Pool, call: JsonCall): Promise<{ status: number; body: string }> {
  const response = await target.request({
    method: call.method,
    path: call.path,
    headers: call.body === undefined ? {} : { 'content-type': 'application/json' },
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  });
  return { status: response.statusCode, body: await response.body.text() };
}

/**
 * The anti-entropy digest of a peer (its 4,096 bucket hashes), read through the peer API's
 * `digest` call (docs/replication.md) with a root that never matches. It costs the peer the
 * same whatever it holds, unlike /v1/cluster, which counts the live instances (about 80 ms at
 * 100,000): polled every few ms, that would slow the very convergence being timed.
 */
export async function digestOf(target: Pool): Promise<string> {
  const answer = await send(target, { method: 'POST', path: '/v1/peer/digest', body: { from: 'bench-observer', root: '-' } });
  if (answer.status !== 200) throw new Error(`digest answered ${answer.status}`);
  const body = JSON.parse(answer.body) as { match: boolean; buckets?: string };
  return body.buckets ?? '';
}

/** Waits (bounded, polling every `intervalMs`) until every peer holds the same digest; returns how long it took, or NaN. */
export async function timeToAgree(digestPools: Pool[], maxMs: number, intervalMs = 20): Promise<number> {
  const startedMs = performance.now();
  while (performance.now() - startedMs < maxMs) {
    const digests = new Set(await Promise.all(digestPools.map(digestOf)));
    if (digests.size === 1) return performance.now() - startedMs;
    await sleep(intervalMs);
  }
  return Number.NaN;
}

/** How long a `GET /healthz` sent now takes to be answered 200 (a peer just continued answers when its loop reaches the request). */
export async function timeToAnswer(url: string): Promise<number> {
  const startedMs = performance.now();
  const target = pool(url, 1);
  try {
    const answer = await send(target, { method: 'GET', path: '/healthz' });
    return answer.status === 200 ? performance.now() - startedMs : Number.NaN;
  } finally {
    await target.close();
  }
}

/**
 * Ms from `sinceEpochMs` to the first "peer back" line about `peerId` in a peer's log (pino
 * JSON lines, `time` in epoch ms), or null: none logged (the peers log at warn by default).
 */
export function seenBackAfter(logFile: string, peerId: string, sinceEpochMs: number): number | null {
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"peer back"')) continue;
    try {
      const entry = JSON.parse(line) as { time?: number; peer?: string };
      if (entry.peer === peerId && typeof entry.time === 'number' && entry.time >= sinceEpochMs) return entry.time - sinceEpochMs;
    } catch {
      // a line cut short by the process's end
    }
  }
  return null;
}

/**
 * When each peer of `logFiles` logged `peerId` back, from `sinceEpochMs` (`seenBackAfter`):
 * their logs are read again every 100 ms for up to `maxMs` while one has not (a peer may log
 * it after the figure being timed); null for each that never did.
 */
export async function seenBackBy(logFiles: string[], peerId: string, sinceEpochMs: number, maxMs: number): Promise<(number | null)[]> {
  const read = () => logFiles.map((file) => seenBackAfter(file, peerId, sinceEpochMs));
  const untilMs = performance.now() + maxMs;
  let seen = read();
  while (seen.includes(null) && performance.now() < untilMs) {
    await sleep(100);
    seen = read();
  }
  return seen;
}

/** One unlabelled series' value on a peer's /metrics (`registry_...`), or null when it has none. */
export async function metricFigure(peerUrl: string, name: string): Promise<number | null> {
  const response = await request(loopbackOnly(`${peerUrl}/metrics`));
  const line = (await response.body.text()).split('\n').find((row) => row.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1).trim().split(' ')[0]);
}

export async function getJson<T>(url: string): Promise<T> {
  const response = await request(loopbackOnly(url));
  if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
  return (await response.body.json()) as T;
}

/**
 * Runs `count` operations with at most `concurrency` in flight, stopping early after
 * `maxMs`. Returns the latencies (ms) of the operations that ran and how long it took.
 */
export async function runBounded(
  count: number,
  concurrency: number,
  maxMs: number,
  operation: (index: number) => Promise<void>,
  label?: string,
): Promise<{ latenciesMs: number[]; elapsedMs: number; done: number; errors: number }> {
  const latenciesMs: number[] = [];
  const startedMs = performance.now();
  let next = 0;
  let errors = 0;
  let lastReportMs = startedMs;
  const worker = async () => {
    while (next < count && performance.now() - startedMs < maxMs) {
      const index = next++;
      const t0 = performance.now();
      try {
        await operation(index);
        latenciesMs.push(performance.now() - t0);
      } catch {
        errors += 1;
      }
      if (label && performance.now() - lastReportMs > 5_000) {
        lastReportMs = performance.now();
        progress(`${label}: ${latenciesMs.length}/${count}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latenciesMs, elapsedMs: performance.now() - startedMs, done: latenciesMs.length, errors };
}

/**
 * Runs `operation` at a fixed rate (operations per second) for `durationMs`, without waiting
 * for answers to pace (open loop), with at most `maxInFlight` outstanding.
 */
export async function runAtRate(
  ratePerSecond: number,
  durationMs: number,
  maxInFlight: number,
  operation: (index: number) => Promise<void>,
): Promise<{ sent: number; errors: number; skipped: number }> {
  const startedMs = performance.now();
  let due = 0;
  let sent = 0;
  let errors = 0;
  let skipped = 0;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  for (;;) {
    const elapsedMs = performance.now() - startedMs;
    if (elapsedMs >= durationMs) break;
    // Catch up with the schedule: operation n is due at n / rate seconds.
    const target = Math.floor((elapsedMs * ratePerSecond) / 1_000);
    while (due < target) {
      due += 1;
      if (inFlight >= maxInFlight) {
        skipped += 1;
        continue;
      }
      inFlight += 1;
      const index = sent++;
      const task: Promise<void> = operation(index)
        .catch(() => {
          errors += 1;
        })
        .finally(() => {
          inFlight -= 1;
          pending.delete(task);
        });
      pending.add(task);
    }
    await sleep(2);
  }
  await Promise.all(pending);
  return { sent, errors, skipped };
}

/** Writes a result file under bench/out/ (git-ignored) and returns its path. */
export function writeResult(name: string, result: unknown): string {
  const dir = new URL('./out/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`${name}.json`, dir);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file.pathname;
}

/** Prints a markdown table. */
export function table(rows: Record<string, string | number>[]): string {
  if (rows.length === 0) return '';
  const columns = Object.keys(rows[0]!);
  const lines = [`| ${columns.join(' | ')} |`, `| ${columns.map(() => '---').join(' | ')} |`];
  for (const row of rows) lines.push(`| ${columns.map((column) => String(row[column] ?? '')).join(' | ')} |`);
  return lines.join('\n');
}

/**
 * The turns of the event loop while `work` runs, seen by a setImmediate ticker: the longest gap
 * between two of its ticks (what a heartbeat arriving meanwhile waits at most), the 99th
 * percentile of those gaps, and the whole time (ms).
 */
export async function turnGaps(work: () => Promise<unknown>): Promise<{ longestMs: number; p99Ms: number; totalMs: number }> {
  const gaps: number[] = [];
  let last = performance.now();
  let ticking = true;
  const tick = () => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const startedMs = performance.now();
  await work();
  const endMs = performance.now();
  ticking = false;
  gaps.push(endMs - last);
  let longestMs = 0;
  for (const gap of gaps) longestMs = Math.max(longestMs, gap);
  return { longestMs: round(longestMs, 1), p99Ms: round(percentile(gaps, 0.99), 1), totalMs: round(endMs - startedMs, 1) };
}

/**
 * Waits (bounded) until the profile a peer was told to write is there and no longer grows: the
 * peer writes it after its profiler stops, and the peers are stopped right after.
 */
export async function profileWritten(file: string, maxMs: number): Promise<void> {
  const untilMs = performance.now() + maxMs;
  let size = -1;
  while (performance.now() < untilMs) {
    await sleep(250);
    const now = existsSync(file) ? statSync(file).size : -1;
    if (now > 0 && now === size) return;
    size = now;
  }
  progress(`no complete profile at ${file} after ${maxMs / 1_000} s`);
}
