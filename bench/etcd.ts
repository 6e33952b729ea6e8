/**
 * Registration and listing against etcd (Debian's etcd-server, 3.4), both on 127.0.0.1 in the
 * same run with the same load generator: registering N instances with leases (etcd: a lease
 * grant and a put through its JSON gateway, as a registry client on etcd does; ours: one
 * register), and listing a service of N instances (etcd: a prefix range; ours: GET the
 * service). etcd is installed with apt-get when missing (as root), started with a temporary
 * data dir and killed by pid at the end. When it cannot be had, the section says why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, pool, progress, round, runBounded, send } from './lib.js';
import { pinLoadGenerator, pinningAvailable, startPeer, startServer, type ServerProcess } from './processes.js';
import { median } from './single-peer.js';

export interface EtcdResult {
  measured: boolean;
  /** Why not, when not measured. */
  reason?: string;
  version?: string;
  gatewayPrefix?: string;
  dataDirFilesystem?: string;
  pinned?: boolean;
  instances?: number;
  concurrency?: number;
  /** `ratio`: the median over ten alternating chunks of our rate over etcd's in the same chunk. */
  register?: { oursPerSecond: number; etcdPerSecond: number; ratio: number; chunkRatios: number[]; target: number; oursErrors: number; etcdErrors: number };
  list?: { oursP50Ms: number; etcdP50Ms: number; ratio: number; repetitions: number };
}

export const ETCD_REGISTER_TARGET = 5;
const CONCURRENCY = 32;
const LEASE_TTL_S = 30;
const b64 = (text: string) => Buffer.from(text).toString('base64');

/** Finds etcd, installing Debian's etcd-server when it is missing and we may. */
function findEtcd(): { path?: string; reason?: string } {
  const which = () => spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).stdout.trim();
  if (which()) return { path: which() };
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim() === '') return { reason: 'etcd is not installed and apt-get is not available' };
  if (process.getuid?.() !== 0) return { reason: 'etcd is not installed and installing it needs root (apt-get install etcd-server)' };
  progress('etcd is missing: apt-get install -y etcd-server');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'etcd-server'], { encoding: 'utf8', env, timeout: 180_000 });
  if (install.status !== 0) {
    spawnSync('apt-get', ['update'], { encoding: 'utf8', env, timeout: 180_000 });
    install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'etcd-server'], { encoding: 'utf8', env, timeout: 180_000 });
  }
  if (install.status !== 0 || !which()) return { reason: `apt-get install etcd-server failed: ${(install.stderr || install.stdout).trim().split('\n').at(-1)}` };
  return { path: which() };
}

async function startEtcd(path: string, dataDir: string, pinned: boolean): Promise<ServerProcess> {
  const clientPort = await freePort();
  const peerPort = await freePort();
  return startServer({
    name: 'etcd',
    command: path,
    args: [
      '--name', 'bench',
      '--data-dir', dataDir,
      '--listen-client-urls', `http://127.0.0.1:${clientPort}`,
      '--advertise-client-urls', `http://127.0.0.1:${clientPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-cluster', `bench=http://127.0.0.1:${peerPort}`,
      '--log-level', 'error',
    ],
    pinned,
    healthPath: '/health',
    port: clientPort,
  });
}

/** etcd 3.4 serves its JSON gateway under /v3/ (and /v3beta/); older ones under /v3beta/ or /v3alpha/. */
async function gatewayPrefix(target: Pool): Promise<string> {
  for (const prefix of ['/v3', '/v3beta', '/v3alpha']) {
    const answer = await send(target, { method: 'POST', path: `${prefix}/kv/range`, body: { key: b64('probe') } });
    if (answer.status === 200) return prefix;
  }
  throw new Error('etcd answers no known JSON gateway prefix');
}

function instanceBody(i: number) {
  return { service: i >= 1_000_000 ? 'etcd-warm-up' : 'etcd-bench', instanceId: `i-${i}`, host: '10.0.0.1', port: 1 + (i % 60_000), leaseDurationMs: LEASE_TTL_S * 1_000, metadata: { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' } };
}

export async function benchEtcd(options: { quick: boolean }): Promise<EtcdResult> {
  const found = findEtcd();
  if (!found.path) {
    progress(`etcd: not measured (${found.reason})`);
    return { measured: false, reason: found.reason };
  }
  const version = spawnSync(found.path, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim();
  const instances = options.quick ? 2_000 : 10_000;
  const repetitions = options.quick ? 5 : 20;
  const pinned = pinningAvailable();
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-etcd-'));
  const filesystem = spawnSync('stat', ['-f', '-c', '%T', dataDir], { encoding: 'utf8' }).stdout.trim();
  progress(`etcd: ${version}; ${instances} registrations with leases, then listing them (${repetitions} times), data dir on ${filesystem}`);
  const servers: ServerProcess[] = [];
  const pools: Pool[] = [];
  try {
    const etcd = await startEtcd(found.path, dataDir, pinned);
    servers.push(etcd);
    const peer = await startPeer('etcd-peer', { pinned });
    servers.push(peer);
    const etcdPool = pool(etcd.url, CONCURRENCY);
    const peerPool = pool(peer.url, CONCURRENCY);
    pools.push(etcdPool, peerPool);
    const prefix = await gatewayPrefix(etcdPool);
    if (pinned) pinLoadGenerator(true);

    const registerOnEtcd = async (i: number) => {
      const grant = await send(etcdPool, { method: 'POST', path: `${prefix}/lease/grant`, body: { TTL: LEASE_TTL_S } });
      if (grant.status !== 200) throw new Error(`lease grant answered ${grant.status}`);
      const lease = (JSON.parse(grant.body) as { ID: string }).ID;
      const put = await send(etcdPool, {
        method: 'POST',
        path: `${prefix}/kv/put`,
        body: { key: b64(`/services/${instanceBody(i).service}/i-${i}`), value: b64(JSON.stringify(instanceBody(i))), lease },
      });
      if (put.status !== 200) throw new Error(`put answered ${put.status}`);
    };
    const registerOnPeer = async (i: number) => {
      const answer = await send(peerPool, { method: 'POST', path: '/v1/instances', body: instanceBody(i) });
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
    };
    // Warm up both (JIT, connections, etcd's first WAL segment) on other keys, untimed, with as
    // many registrations as are measured, as the single-peer rounds warm up for a second: with
    // 500 the peer's first chunks still measured V8 compiling its code (its rate rose tenfold
    // over the ten chunks while etcd's stayed flat, see bench/findings.md).
    const WARM_UP = instances;
    await runBounded(WARM_UP, CONCURRENCY, 60_000, (i) => registerOnEtcd(1_000_000 + i));
    await runBounded(WARM_UP, CONCURRENCY, 60_000, (i) => registerOnPeer(1_000_000 + i));
    // In tenths, alternating who goes first; the ratio is the median of the tenths' ratios, so
    // that a burst of the neighbours' load skews a few of them, not the figure.
    const totals = { etcd: { done: 0, errors: 0, elapsedMs: 0 }, ours: { done: 0, errors: 0, elapsedMs: 0 } };
    const chunkRatios: number[] = [];
    const CHUNKS = 10;
    const chunk = instances / CHUNKS;
    for (let c = 0; c < CHUNKS; c++) {
      const order = c % 2 === 0 ? (['etcd', 'ours'] as const) : (['ours', 'etcd'] as const);
      const rates = { etcd: 0, ours: 0 };
      for (const name of order) {
        const register = name === 'etcd' ? registerOnEtcd : registerOnPeer;
        const run = await runBounded(chunk, CONCURRENCY, 60_000, (i) => register(c * chunk + i), `${name} register`);
        totals[name].done += run.done;
        totals[name].errors += run.errors;
        totals[name].elapsedMs += run.elapsedMs;
        rates[name] = run.done / run.elapsedMs;
      }
      chunkRatios.push(rates.ours / rates.etcd);
    }
    const etcdRegister = totals.etcd;
    const oursRegister = totals.ours;
    const etcdPerSecond = etcdRegister.done / (etcdRegister.elapsedMs / 1_000);
    const oursPerSecond = oursRegister.done / (oursRegister.elapsedMs / 1_000);
    const register = {
      oursPerSecond: round(oursPerSecond, 0),
      etcdPerSecond: round(etcdPerSecond, 0),
      ratio: round(median(chunkRatios), 2),
      chunkRatios: chunkRatios.map((value) => round(value, 2)),
      target: ETCD_REGISTER_TARGET,
      oursErrors: oursRegister.errors,
      etcdErrors: etcdRegister.errors,
    };
    progress(`etcd register: ours ${register.oursPerSecond}/s, etcd ${register.etcdPerSecond}/s: ${register.ratio}x (target >= ${ETCD_REGISTER_TARGET}x)`);

    const rangeEnd = b64('/services/etcd-bench0'); // '/' + 1 = '0': the end of the prefix
    const etcdList: number[] = [];
    const oursList: number[] = [];
    for (let r = 0; r < repetitions; r++) {
      let t0 = performance.now();
      const range = await send(etcdPool, { method: 'POST', path: `${prefix}/kv/range`, body: { key: b64('/services/etcd-bench/'), range_end: rangeEnd } });
      etcdList.push(performance.now() - t0);
      if (range.status !== 200 || Number((JSON.parse(range.body) as { count?: string }).count) !== etcdRegister.done) throw new Error('etcd range did not list every key');
      t0 = performance.now();
      const listing = await send(peerPool, { method: 'GET', path: '/v1/services/etcd-bench' });
      oursList.push(performance.now() - t0);
      if (listing.status !== 200 || (JSON.parse(listing.body) as { instances: unknown[] }).instances.length !== oursRegister.done) throw new Error('the peer did not list every instance');
    }
    const list = {
      oursP50Ms: round(percentile(oursList, 0.5), 1),
      etcdP50Ms: round(percentile(etcdList, 0.5), 1),
      ratio: round(percentile(etcdList, 0.5) / percentile(oursList, 0.5), 2),
      repetitions,
    };
    progress(`etcd list of ${instances}: ours p50 ${list.oursP50Ms} ms, etcd p50 ${list.etcdP50Ms} ms (${list.ratio}x)`);
    return { measured: true, version, gatewayPrefix: prefix, dataDirFilesystem: filesystem, pinned, instances, concurrency: CONCURRENCY, register, list };
  } finally {
    if (pinned) pinLoadGenerator(false);
    for (const target of pools) await target.close();
    for (const server of servers) await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
