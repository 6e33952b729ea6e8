import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { parse } from 'yaml';
import { onFreshPorts, PortTakenError } from './ports.js';
import { waitFor } from './process.js';

/** Debian's Prometheus (`apt-get install prometheus`; `npm test` installs it: scripts/test-deps.mjs). */
export const PROMETHEUS_BINARY = '/usr/bin/prometheus';

/** A target as Prometheus's `/api/v1/targets` lists it. */
export interface ActiveTarget {
  discoveredLabels: Record<string, string>;
  labels: Record<string, string>;
  scrapePool: string;
  scrapeUrl: string;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
}

export interface DroppedTarget {
  discoveredLabels: Record<string, string>;
}

export interface PrometheusProcess {
  url: string;
  child: ChildProcess;
  /** What it logged so far (stdout and stderr). */
  output(): string;
  /** Kills it by its pid (only ever the process this helper started) and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * Runs Prometheus on 127.0.0.1 with `config` (JSON is YAML), its data and config in `dir`, and
 * waits until `/-/ready` answers. Nothing remote: no remote write or read, no alertmanager.
 * Its port is picked beforehand (it does not say which port 0 gave it): when that port was
 * taken before it listened, it starts again on a fresh one.
 */
export async function startPrometheus(config: unknown, dir: string): Promise<PrometheusProcess> {
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, JSON.stringify(config, null, 2));
  return onFreshPorts(1, ([port]) => startPrometheusOn(port!, configFile, dir));
}

async function startPrometheusOn(port: number, configFile: string, dir: string): Promise<PrometheusProcess> {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    PROMETHEUS_BINARY,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--storage.tsdb.retention.time=1h'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // 'close', not 'exit': only then has all of its output arrived.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (child.pid !== undefined && running()) {
      process.kill(child.pid, 'SIGKILL');
      await exited;
    }
  };
  try {
    await waitFor(
      async () => {
        if (!running()) {
          await closed;
          const why = `prometheus exited (${child.exitCode ?? child.signalCode}): ${output.slice(-3_000)}`;
          // "Unable to start web listener" err="listen tcp 127.0.0.1:PORT: bind: address already in use"
          throw output.includes(`listen tcp 127.0.0.1:${port}: bind: address already in use`) ? new PortTakenError(why) : new Error(why);
        }
        try {
          const response = await request(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) });
          await response.body.dump();
          return response.statusCode === 200;
        } catch {
          return false;
        }
      },
      30_000,
      'prometheus to be ready',
      200,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, child, output: () => output, stop };
}

/** Prometheus's active and dropped targets now. */
export async function targetsOf(prometheusUrl: string): Promise<{ active: ActiveTarget[]; dropped: DroppedTarget[] }> {
  const response = await request(`${prometheusUrl}/api/v1/targets`);
  const body = (await response.body.json()) as { status: string; data: { activeTargets: ActiveTarget[]; droppedTargets: DroppedTarget[] } };
  if (body.status !== 'success') throw new Error(`/api/v1/targets answered ${JSON.stringify(body)}`);
  return { active: body.data.activeTargets, dropped: body.data.droppedTargets };
}

type Job = Record<string, unknown>;

/** Every scrape job of the ```yaml blocks of a markdown page, in order. */
export function scrapeJobsOf(markdown: string): Job[] {
  const blocks = [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks.flatMap((block) => ((parse(block) as { scrape_configs?: Job[] }).scrape_configs ?? []));
}
