import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compareVersions } from '../../src/clock/hlc.js';
import { callJson as call } from '../support/http.js';
import { mainScript, projectRoot, runPeerToExit, startedUrl, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

const inspectScript = fileURLToPath(new URL('../../dist/cli/inspect-data.js', import.meta.url));
// Made in beforeAll: a run that skips every test here runs no hook and must leave nothing behind.
let base = '';
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'registry-e2e-durable-'));
});
const started: PeerProcess[] = [];
afterEach(() => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

let dirs = 0;
const newDataDir = () => join(base, `data-${dirs++}`);

async function startPeer(dataDir: string, ...extra: string[]): Promise<PeerProcess> {
  const peer = await startPeerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...extra]);
  started.push(peer);
  return peer;
}

const instanceUrl = (peer: PeerProcess, id: string) => `${peer.url}/v1/services/orders/instances/${id}`;

/** The last acknowledged write of each instance: the version the peer answered, and whether it was a cancel. */
type Acked = Map<string, { version: string; cancelled: boolean; status: string }>;
/** Writes sent but never answered (in flight at the kill): they may or may not have been applied. */
type InDoubt = Map<string, 'register' | 'status' | 'cancel'>;

/** A connection the peer refused never reached it: that write was surely not applied. */
const refused = (error: unknown) =>
  (error as { code?: string }).code === 'ECONNREFUSED' || (error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';

/**
 * Writers with a fixed concurrency: registers of new instances, status changes and cancels
 * of acknowledged ones. Bounded in count and time. Each writer goes on until a call fails,
 * so a kill ends the stream whenever it comes: an answer the peer sent before it died still
 * counts as acknowledged, and whatever the writer sent after it is in doubt (unless refused).
 */
function writeStream(peer: PeerProcess, options: { concurrency: number; maxWrites: number; maxMs: number }) {
  const acked: Acked = new Map();
  const inDoubt: InDoubt = new Map();
  let writes = 0;
  let pending = 0;
  let cut = 0;
  const deadline = Date.now() + options.maxMs;
  const worker = async (w: number) => {
    for (let n = 0; writes < options.maxWrites && Date.now() < deadline; n++) {
      writes += 1;
      const mine = [...acked].filter(([id, state]) => id.startsWith(`w${w}-`) && !state.cancelled);
      let sending: [string, 'register' | 'status' | 'cancel'] | undefined;
      pending += 1;
      try {
        if (n % 5 === 3 && mine.length > 0) {
          const [id] = mine[n % mine.length]!;
          const status = n % 2 === 0 ? 'DOWN' : 'OUT_OF_SERVICE';
          sending = [id, 'status'];
          const answer = await call('PUT', `${instanceUrl(peer, id)}/status`, { status });
          if (answer.status === 200) acked.set(id, { version: answer.body.version, cancelled: false, status });
        } else if (n % 7 === 6 && mine.length > 0) {
          const [id] = mine[0]!;
          sending = [id, 'cancel'];
          const answer = await call('DELETE', instanceUrl(peer, id));
          if (answer.status === 200) acked.set(id, { version: answer.body.version, cancelled: true, status: '' });
        } else {
          const id = `w${w}-${n}`;
          sending = [id, 'register'];
          const answer = await call('POST', `${peer.url}/v1/instances`, {
            service: 'orders',
            host: '127.0.0.1',
            port: 10_000 + n,
            instanceId: id,
            leaseDurationMs: 120_000,
            metadata: { worker: String(w), n: String(n) },
          });
          if (answer.status === 201) acked.set(id, { version: answer.body.version, cancelled: false, status: 'UP' });
        }
      } catch (error) {
        if (sending && !refused(error)) inDoubt.set(...sending);
        cut += 1;
        return; // the peer is gone: whatever was in flight was never acknowledged
      } finally {
        pending -= 1;
      }
    }
  };
  const done = Promise.all(Array.from({ length: options.concurrency }, (_, w) => worker(w)));
  /** Writes sent and not yet answered; the writers that a failed call ended. */
  return { acked, inDoubt, done, pending: () => pending, cut: () => cut };
}

/**
 * Every acknowledged write must be there after the restart, or a newer write: only one whose
 * answer was lost at the kill (a cancel in doubt may have removed the instance). Returns the missing ones.
 */
async function missingAfterRestart(peer: PeerProcess, acked: Acked, inDoubt: InDoubt): Promise<string[]> {
  const missing: string[] = [];
  for (const [id, state] of acked) {
    const answer = await call('GET', instanceUrl(peer, id));
    if (state.cancelled) {
      if (answer.status !== 404) missing.push(`${id}: cancelled, but answered ${answer.status}`);
    } else if (answer.status === 404 && inDoubt.get(id) === 'cancel') {
      continue;
    } else if (answer.status !== 200) {
      missing.push(`${id}: answered ${answer.status}`);
    } else if (compareVersions(answer.body.version, state.version) < 0) {
      missing.push(`${id}: version ${answer.body.version} older than the acknowledged ${state.version}`);
    }
  }
  return missing;
}

describe('a durable peer as a real process', () => {
  it.each(['always', 'interval'])(
    'with %s: kill -9 in the middle of a stream of acknowledged writes loses none of them',
    async (syncPolicy) => {
      const dataDir = newDataDir();
      const first = await startPeer(dataDir, '--sync-policy', syncPolicy);
      const stream = writeStream(first, { concurrency: 8, maxWrites: 20_000, maxMs: 45_000 });
      await waitFor(() => stream.acked.size >= 300, 30_000, '300 acknowledged writes');
      const unansweredAtKill = stream.pending();
      first.kill('SIGKILL');
      await stream.done;
      await first.exited;
      // The kill came in the middle of the stream: writes were unanswered when it came, and it
      // (not the stream's bounds) ended every writer. Whether the peer had already answered
      // those writes when it died is up to the scheduler; both cases are checked below.
      expect(unansweredAtKill).toBeGreaterThan(0);
      expect(stream.cut()).toBe(8);

      const second = await startPeer(dataDir, '--sync-policy', syncPolicy);
      expect(second.logs.some((line) => line.msg === 'data dir lock taken over')).toBe(true);
      expect(await missingAfterRestart(second, stream.acked, stream.inDoubt)).toEqual([]);
      // No client of a restored instance is told to register again.
      const settled = [...stream.acked].filter(([id, s]) => !s.cancelled && !stream.inDoubt.has(id));
      for (const [id, state] of settled.slice(0, 50)) {
        expect((await call('PUT', `${instanceUrl(second, id)}/heartbeat`)).status, id).toBe(200);
        expect((await call('GET', instanceUrl(second, id))).body.status).toBe(state.status);
      }
    },
    60_000,
  );

  it('keeps every instance whose client heartbeats through a restart; no heartbeat is answered 404', async () => {
    // Long enough that a loaded CI machine (a start taking seconds) cannot let a lease run out
    // between two heartbeats; the peer stays down for longer than one, which is the point.
    const LEASE_MS = 6_000;
    const dataDir = newDataDir();
    const first = await startPeer(dataDir, '--profile', 'local');
    const ids = Array.from({ length: 20 }, (_, i) => `hb-${i}`);
    for (const id of ids) {
      const answer = await call('POST', `${first.url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId: id, leaseDurationMs: LEASE_MS });
      expect(answer.status).toBe(201);
    }
    // Clients heartbeat every 300 ms against whichever process is up.
    let target = first.url;
    const statuses: number[] = [];
    const lastStatus = new Map<string, number>();
    let heartbeating = true;
    const clients = Promise.all(
      ids.map(async (id) => {
        const until = Date.now() + 45_000;
        while (heartbeating && Date.now() < until) {
          try {
            const { status } = await call('PUT', `${target}/v1/services/orders/instances/${id}/heartbeat`);
            statuses.push(status);
            lastStatus.set(id, status);
          } catch {
            // connection refused while the peer restarts
          }
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 600));
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const downAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 1_000)); // down for longer than a lease
    const second = await startPeer(dataDir, '--profile', 'local');
    target = second.url;
    expect(Date.now() - downAt).toBeGreaterThan(LEASE_MS);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 1_000)); // past the restored grace lease
    heartbeating = false;
    await clients;

    // A peer shutting down answers 503 to what is in flight; never 404, which would make a client register again.
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect([...lastStatus.values()].every((status) => status === 200)).toBe(true);
    expect(lastStatus.size).toBe(ids.length);
    const listed = await call('GET', `${second.url}/v1/services/orders`);
    expect(listed.body.instances.map((instance: { instanceId: string }) => instance.instanceId).sort()).toEqual([...ids].sort());
  }, 60_000);

  it('starts again at once after kill -9 while the killed peer is still a zombie (its parent has not reaped it)', async () => {
    const dataDir = newDataDir();
    const logFile = `${dataDir}.log`;
    // What a supervisor that is slow to reap does: the peer's parent is a shell that execs
    // `sleep` and never waits for it, so the killed peer stays a zombie while we restart.
    const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;
    const peerCommand = [process.execPath, mainScript, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir].map(quote).join(' ');
    const parent = spawn('sh', ['-c', `${peerCommand} >${quote(logFile)} 2>&1 & echo $!; exec sleep 60`], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const firstPid = await new Promise<number>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))));
      const url = await waitFor(() => startedUrl(existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''), 20_000, 'the first peer to start');
      await waitFor(async () => (await call('GET', `${url}/readyz`).catch(() => ({ status: 0 }))).status === 200, 20_000, 'the first peer to be ready');
      expect((await call('POST', `${url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId: 'kept', leaseDurationMs: 120_000 })).status).toBe(201);
      process.kill(firstPid, 'SIGKILL');
      await waitFor(() => readFileSync(`/proc/${firstPid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z'), 10_000, 'the killed peer to be a zombie');

      const second = await startPeer(dataDir);
      expect(existsSync(`/proc/${firstPid}`)).toBe(true); // still a zombie: it was not waited for
      expect(second.logs.find((line) => line.msg === 'data dir lock taken over')?.why).toContain(`pid ${firstPid}`);
      expect(second.logs.some((line) => line.msg === 'data dir locked: waiting for its holder to exit')).toBe(false);
      expect((await call('GET', `${second.url}/v1/services/orders/instances/kept`)).status).toBe(200);
    } finally {
      parent.kill('SIGKILL');
    }
  }, 60_000);

  it('exits with code 2 naming the problem for a data dir that is locked or not a directory', async () => {
    const dataDir = newDataDir();
    const holder = await startPeer(dataDir);
    const locked = await runPeerToExit(['--port', '0', '--data-dir', dataDir]);
    expect(locked.code).toBe(2);
    expect(locked.stderr).toContain(`registry: cannot use the data dir ${dataDir}: it is locked by another running peer (pid ${holder.child.pid} on`);

    const file = join(base, 'a-file');
    writeFileSync(file, 'not a directory');
    const notDir = await runPeerToExit(['--port', '0', '--data-dir', join(file, 'data')]);
    expect(notDir.code).toBe(2);
    expect(notDir.stderr).toContain(`cannot create the data dir: a path component is not a directory (ENOTDIR)`);
  });
});

/**
 * Permissions only bind a process that is not root: as root, the peer is started as `nobody`
 * through runuser (when it is there and can read the build); otherwise as ourselves.
 */
function unprivilegedPeer(): ((args: string[]) => { code: number | null; stderr: string }) | null {
  const run = (command: string, args: string[]) => {
    const result = spawnSync(command, args, { cwd: projectRoot, encoding: 'utf8', timeout: 20_000 });
    return { code: result.status, stderr: result.stderr };
  };
  if (process.getuid?.() !== 0) return (args) => run(process.execPath, [mainScript, ...args]);
  if (!existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) return null;
  if (run('runuser', ['-u', 'nobody', '--', process.execPath, '-e', `require('fs').accessSync(${JSON.stringify(mainScript)})`]).code !== 0) {
    return null;
  }
  return (args) => run('runuser', ['-u', 'nobody', '--', process.execPath, mainScript, ...args]);
}

describe('a data dir without write permission', () => {
  const runPeer = unprivilegedPeer();
  it.skipIf(runPeer === null)('exits with code 2 naming the problem, whether the dir exists or must be created', () => {
    chmodSync(base, 0o755);
    const readOnly = join(base, 'read-only');
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    const existing = runPeer!(['--port', '0', '--data-dir', readOnly]);
    expect(existing.code).toBe(2);
    expect(existing.stderr).toContain(`registry: cannot use the data dir ${readOnly}: cannot write the lock file: permission denied (EACCES)`);
    const toCreate = runPeer!(['--port', '0', '--data-dir', join(readOnly, 'sub')]);
    expect(toCreate.code).toBe(2);
    expect(toCreate.stderr).toContain('cannot create the data dir: permission denied (EACCES)');
    chmodSync(readOnly, 0o755);
  });
});

function inspect(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [inspectScript, ...args], { cwd: projectRoot });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('data:inspect', () => {
  it('reports format, files and counts, then the damage a torn tail left, and what the peer did about it', async () => {
    const dataDir = newDataDir();
    const peer = await startPeer(dataDir);
    for (let i = 0; i < 5; i++) {
      await call('POST', `${peer.url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000 + i, leaseDurationMs: 60_000 });
    }
    await call('DELETE', `${peer.url}/v1/services/orders/instances/127.0.0.1:9004`);
    peer.kill('SIGTERM');
    await peer.exited;

    const clean = await inspect('--json', dataDir);
    expect(clean.code).toBe(0);
    const report = JSON.parse(clean.stdout);
    expect(report).toMatchObject({ formatVersion: 1, lock: null, damagedFiles: 0, recovered: { instances: 4, tombstones: 1, snapshot: null } });
    expect(report.segments).toHaveLength(1);
    expect(report.segments[0]).toMatchObject({ name: 'log-0000000000000001.seg', records: 6, damage: null });

    const segment = join(dataDir, 'log-0000000000000001.seg');
    const bytes = readFileSync(segment);
    writeFileSync(segment, bytes.subarray(0, bytes.length - 10));
    const damaged = await inspect(dataDir);
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toContain('format version 1');
    expect(damaged.stdout).toMatch(/log-0000000000000001\.seg {2}5 records .* DAMAGED at offset \d+: truncated frame \(\d+ bytes dropped\)/);
    // The cut frame was the cancel: the instance it removed comes back.
    expect(damaged.stdout).toContain('a start would load: 5 instances, 0 tombstones (from the log alone)');
    expect(damaged.stdout).toContain('damage: 1 file(s) damaged');

    const restarted = await startPeer(dataDir);
    const cut = restarted.logs.find((line) => line.msg === 'log segment damaged: cut at offset');
    expect(cut).toMatchObject({ file: 'log-0000000000000001.seg', reason: 'truncated frame', recordsKept: 5 });
    restarted.kill('SIGTERM');
    await restarted.exited;
    const after = await inspect(dataDir);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('set aside (damaged earlier): log-0000000000000001.seg.damaged');
    expect(after.stdout).toContain('a start would load: 5 instances, 0 tombstones (from snapshot-0000000000000003.snap and the log after it)');

    const missing = await inspect(join(base, 'nothing-here'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file or directory (ENOENT)');
  });
});
