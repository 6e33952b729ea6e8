import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import {
  PROMETHEUS_BINARY,
  scrapeJobsOf,
  startPrometheus,
  targetsOf,
  type ActiveTarget,
  type PrometheusProcess,
} from '../support/prometheus.js';

/**
 * Debian's real Prometheus (2.42) discovers the registry both ways it can, with the scrape
 * configs of docs/prometheus.md as they are written there (only the peer's address, the token
 * file and a 1 s refresh are changed): `eureka_sd_configs` against the Eureka API (`GET
 * {server}/apps`, no Accept header, XML) and `http_sd_configs` against `GET /v1/sd/prometheus`,
 * each sending a token. Checked through Prometheus's own API (/api/v1/targets): every job lists
 * exactly the instances it should with their labels, the relabelling examples do what the page
 * says, the targets are scraped, and a cancelled instance and a DOWN one leave the targets.
 * Everything runs on 127.0.0.1; every registered port is a tiny HTTP server of this test.
 */

const present = existsSync(PROMETHEUS_BINARY);
const skip = !present && !process.env.CI;
if (skip) console.warn(`test/e2e/prometheus.test.ts skipped: ${PROMETHEUS_BINARY} is absent (apt-get install prometheus); with CI set it runs, and fails without it`);

/** Prometheus's discovery manager passes target updates on at most every 5 s: allow several rounds. */
const TARGETS_WAIT_MS = 45_000;
const READ_TOKEN = 'prometheus-e2e-read-token-0001';
const WRITE_TOKEN = 'prometheus-e2e-write-token-001';
const writer = { authorization: `Bearer ${WRITE_TOKEN}` };
/** Long enough that the test needs no heartbeats. */
const LEASE_MS = 300_000;
/** The jobs of docs/prometheus.md, in page order. */
const DOC_JOBS = ['registry', 'team-a-eu-1a', 'orders-blue', 'registry-eureka', 'registry-relabel-examples'];

let dir = '';
let peer: PeerProcess | undefined;
let prometheus: PrometheusProcess | undefined;
const exporters: Server[] = [];

/**
 * A scrape target: Prometheus's text format on /stats (the path the metadata names) and on
 * /metrics (for the documented jobs that do not relabel the path); 404 elsewhere.
 */
async function startExporter(): Promise<{ port: number; address: string }> {
  const server = createServer((req, res) => {
    if (req.url !== '/stats' && req.url !== '/metrics') res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end('e2e_exporter_up 1\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  exporters.push(server);
  const { port } = server.address() as AddressInfo;
  return { port, address: `127.0.0.1:${port}` };
}

type Job = Record<string, any>;

/** A job of the docs, pointed at this run's peer and token file, refreshed every second. */
function forThisRun(job: Job, peerHost: string, tokenFile: string): Job {
  const out = JSON.parse(JSON.stringify(job).replaceAll('127.0.0.1:8761', peerHost).replaceAll('/etc/prometheus/registry-token', tokenFile)) as Job;
  for (const sd of out.http_sd_configs ?? []) {
    sd.refresh_interval = '1s';
    sd.authorization ??= { type: 'Bearer', credentials_file: tokenFile };
  }
  for (const sd of out.eureka_sd_configs ?? []) sd.refresh_interval = '1s';
  return out;
}

async function register(body: Record<string, unknown>): Promise<void> {
  const response = await callJson('POST', `${peer!.url}/v1/instances`, { leaseDurationMs: LEASE_MS, ...body }, writer);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
}

const ofJob = (targets: ActiveTarget[], job: string) => targets.filter((target) => target.scrapePool === job);
/** The target of one instance in one job. */
function targetOf(targets: ActiveTarget[], job: string, instanceId: string): ActiveTarget {
  const found = ofJob(targets, job).find(
    (target) => (target.discoveredLabels.__meta_registry_instance_id ?? target.discoveredLabels.__meta_eureka_app_instance_id) === instanceId,
  );
  if (!found) throw new Error(`no target for ${instanceId} in job ${job}`);
  return found;
}
/** The address Prometheus scrapes (after relabelling). */
const scraped = (targets: ActiveTarget[]) => targets.map((target) => new URL(target.scrapeUrl).host).sort();

/** Waits until each job scrapes exactly the given addresses; returns the targets then. */
async function waitForTargets(wanted: Record<string, string[]>, what: string): Promise<ActiveTarget[]> {
  const expected = Object.fromEntries(Object.entries(wanted).map(([job, list]) => [job, [...list].sort()]));
  let seen: Record<string, string[]> = {};
  let active: ActiveTarget[] = [];
  try {
    await waitFor(
      async () => {
        active = (await targetsOf(prometheus!.url)).active;
        seen = Object.fromEntries(Object.keys(expected).map((job) => [job, scraped(ofJob(active, job))]));
        return JSON.stringify(seen) === JSON.stringify(expected);
      },
      TARGETS_WAIT_MS,
      what,
      250,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}: wanted ${JSON.stringify(expected)}, prometheus has ${JSON.stringify(seen)}; its log ends: ${prometheus!.output().slice(-2_000)}`);
  }
  return active;
}

beforeAll(async () => {
  if (skip) return;
  if (!present) throw new Error(`${PROMETHEUS_BINARY} is absent but CI is set: .ci/run installs the prometheus package`);
  dir = await mkdtemp(join(tmpdir(), 'registry-prometheus-'));
  const configFile = join(dir, 'registry.json');
  await writeFile(
    configFile,
    JSON.stringify({
      security: {
        tokens: [
          { name: 'prometheus', token: READ_TOKEN, namespaces: ['default', 'team-a'], scopes: ['read'] },
          { name: 'registrar', token: WRITE_TOKEN, namespaces: ['*'], scopes: ['write'] },
        ],
      },
      limits: { rateLimitPerSecond: 1_000 },
    }),
  );
  peer = await startPeerProcess(['--port', '0', '--host', '127.0.0.1', '--profile', 'local', '--config', configFile]);
  const tokenFile = join(dir, 'registry-token');
  await writeFile(tokenFile, READ_TOKEN);
  const jobs = scrapeJobsOf(readFileSync(new URL('../../docs/prometheus.md', import.meta.url), 'utf8'));
  expect(jobs.map((job) => job.job_name)).toEqual(DOC_JOBS);
  const peerHost = new URL(peer.url).host;
  prometheus = await startPrometheus(
    {
      global: { scrape_interval: '1s', scrape_timeout: '500ms', evaluation_interval: '1m' },
      scrape_configs: jobs.map((job) => forThisRun(job, peerHost, tokenFile)),
    },
    dir,
  );
}, 60_000);

afterAll(async () => {
  await prometheus?.stop();
  peer?.kill('SIGKILL');
  await Promise.all(exporters.map((server) => new Promise((resolve) => server.close(resolve))));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(skip)('Prometheus 2.42 with the scrape configs of docs/prometheus.md', () => {
  it('lists exactly the registered instances with their labels, relabels them as documented, and drops cancelled and DOWN ones', async () => {
    const [orders1, orders2, billing, billingMetrics, batch, teamOrders, teamBilling, teamStock] = await Promise.all(
      Array.from({ length: 8 }, () => startExporter()),
    );
    const stats = { 'metrics.path': '/stats' };
    await register({ service: 'orders', host: '127.0.0.1', port: orders1!.port, instanceId: 'orders-1', zone: 'eu-1a', metadata: { ...stats, team: 'shop', build_id: 'r1&r2' } });
    await register({ service: 'orders', host: '127.0.0.1', port: orders2!.port, instanceId: 'orders-2', zone: 'eu-1b', group: 'blue', metadata: { ...stats, team: 'shop' } });
    // Metrics on another port (docs: `metrics.port`), and an instance that opts out of scraping.
    await register({ service: 'billing', host: '127.0.0.1', port: billing!.port, instanceId: 'billing-1', zone: 'eu-1a', metadata: { ...stats, 'metrics.port': String(billingMetrics!.port), team: 'pay' } });
    await register({ service: 'batch', host: '127.0.0.1', port: batch!.port, instanceId: 'batch-1', zone: 'eu-1b', metadata: { ...stats, 'prometheus.io/scrape': 'false' } });
    // Namespace team-a: only the job that names it sees these, and only orders and billing in eu-1a.
    await register({ service: 'orders', host: '127.0.0.1', port: teamOrders!.port, instanceId: 'team-orders-1', zone: 'eu-1a', namespace: 'team-a', metadata: stats });
    await register({ service: 'billing', host: '127.0.0.1', port: teamBilling!.port, instanceId: 'team-billing-1', zone: 'eu-1b', namespace: 'team-a', metadata: stats });
    await register({ service: 'stock', host: '127.0.0.1', port: teamStock!.port, instanceId: 'team-stock-1', zone: 'eu-1a', namespace: 'team-a', metadata: stats });

    const everyDefault = [orders1!.address, orders2!.address, billing!.address, batch!.address];
    let active = await waitForTargets(
      {
        registry: everyDefault,
        'registry-eureka': everyDefault,
        'team-a-eu-1a': [teamOrders!.address],
        'orders-blue': [orders2!.address],
        // batch-1 opted out; billing-1 is scraped on its metrics port.
        'registry-relabel-examples': [orders1!.address, orders2!.address, billingMetrics!.address],
      },
      'every job to list its instances',
    );
    const http = targetOf(active, 'registry', 'orders-2');
    expect(http.discoveredLabels).toMatchObject({
      __meta_registry_namespace: 'default',
      __meta_registry_service: 'orders',
      __meta_registry_instance_id: 'orders-2',
      __meta_registry_host: '127.0.0.1',
      __meta_registry_port: String(orders2!.port),
      __meta_registry_zone: 'eu-1b',
      __meta_registry_group: 'blue',
      __meta_registry_status: 'UP',
      __meta_registry_metadata_metrics_path: '/stats',
      __meta_registry_metadata_team: 'shop',
    });
    expect(http.labels).toMatchObject({ job: 'registry', service: 'orders', namespace: 'default', zone: 'eu-1b', instance: 'orders-2' });
    expect(http.scrapeUrl).toBe(`http://${orders2!.address}/stats`);
    const httpOrders1 = targetOf(active, 'registry', 'orders-1');
    expect(httpOrders1.discoveredLabels.__meta_registry_metadata_build_id).toBe('r1&r2');

    const eureka = targetOf(active, 'registry-eureka', 'orders-1');
    expect(eureka.discoveredLabels).toMatchObject({
      __meta_eureka_app_name: 'ORDERS',
      __meta_eureka_app_instance_id: 'orders-1',
      __meta_eureka_app_instance_hostname: '127.0.0.1',
      __meta_eureka_app_instance_ip_addr: '127.0.0.1',
      __meta_eureka_app_instance_status: 'UP',
      __meta_eureka_app_instance_port: String(orders1!.port),
      __meta_eureka_app_instance_port_enabled: 'true',
      __meta_eureka_app_instance_secure_port_enabled: 'false',
      __meta_eureka_app_instance_vip_address: 'orders',
      __meta_eureka_app_instance_secure_vip_address: 'orders',
      __meta_eureka_app_instance_country_id: '1',
      __meta_eureka_app_instance_datacenterinfo_name: 'MyOwn',
      __meta_eureka_app_instance_metadata_metrics_path: '/stats',
      __meta_eureka_app_instance_metadata_team: 'shop',
      // The registry adds the zone to Eureka's metadata (Spring Cloud reads it there).
      __meta_eureka_app_instance_metadata_zone: 'eu-1a',
      // What any Eureka server's XML gives Prometheus (docs/prometheus.md): metadata names in
      // XStream's coding (`_` written `__`), values as escaped XML text.
      __meta_eureka_app_instance_metadata_build__id: 'r1&amp;r2',
    });
    // Eureka discovery sets the instance label to the instance id.
    expect(eureka.labels).toMatchObject({ job: 'registry-eureka', app: 'ORDERS', instance: 'orders-1' });
    expect(eureka.scrapeUrl).toBe(`http://${orders1!.address}/stats`);

    // The relabelling examples: every metadata key as a label (labelmap), the group as a label.
    const relabelled = targetOf(active, 'registry-relabel-examples', 'billing-1');
    expect(relabelled.labels).toMatchObject({ team: 'pay', metrics_path: '/stats', metrics_port: String(billingMetrics!.port), group: 'DEFAULT_GROUP' });
    expect(relabelled.scrapeUrl).toBe(`http://${billingMetrics!.address}/stats`);

    // Every target of every job is scraped.
    let unhealthy: string[] = [];
    await waitFor(
      async () => {
        unhealthy = (await targetsOf(prometheus!.url)).active
          .filter((target) => target.health !== 'up')
          .map((target) => `${target.scrapePool} ${target.scrapeUrl}: ${target.health} ${target.lastError}`);
        return unhealthy.length === 0;
      },
      TARGETS_WAIT_MS,
      'every target to be scraped',
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; not scraped: ${unhealthy.join('; ')}`);
    });

    // A cancel: every job that listed it drops it.
    expect((await callJson('DELETE', `${peer!.url}/v1/services/orders/instances/orders-1`, undefined, writer)).status).toBe(200);
    active = await waitForTargets(
      {
        registry: [orders2!.address, billing!.address, batch!.address],
        'registry-eureka': [orders2!.address, billing!.address, batch!.address],
        'registry-relabel-examples': [orders2!.address, billingMetrics!.address],
      },
      'the cancelled instance to leave the targets',
    );

    // DOWN: the HTTP discovery stops listing it; Eureka lists it with its status, and the
    // eureka job's keep rule (docs/prometheus.md) drops it.
    const down = await callJson('PUT', `${peer!.url}/v1/services/billing/instances/billing-1/status`, { status: 'DOWN' }, writer);
    expect(down.status).toBe(200);
    await waitForTargets(
      {
        registry: [orders2!.address, batch!.address],
        'registry-eureka': [orders2!.address, batch!.address],
        'registry-relabel-examples': [orders2!.address],
      },
      'the DOWN instance to leave the targets',
    );
    const { dropped } = await targetsOf(prometheus!.url);
    expect(dropped.map((target) => target.discoveredLabels)).toContainEqual(
      expect.objectContaining({ __meta_eureka_app_instance_id: 'billing-1', __meta_eureka_app_instance_status: 'DOWN' }),
    );
  }, 240_000);
});
