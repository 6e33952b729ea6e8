import { execFileSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, type CliProcess } from '../support/cli.js';
import { freePort } from '../support/fault-proxy.js';
import { callJson } from '../support/http.js';
import { onFreshPorts } from '../support/ports.js';
import { startedUrl, startFailure, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

let peer: PeerProcess;
let env: Record<string, string>;
const running: CliProcess[] = [];

beforeAll(async () => {
  peer = await startPeerProcess(['--port', '0', '--profile', 'local']);
  env = { REGISTRY_URL: peer.url };
});
afterAll(() => peer?.kill('SIGKILL'));
afterEach(async () => {
  for (const cli of running.splice(0)) await cli.stop('SIGKILL');
});

describe('registry (the command line) against a real peer', () => {
  it('says how to use it, and exits 2 on bad usage and 1 when the peer cannot be reached', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['start', 'cluster', 'ls', 'show', 'register', 'cancel', 'peers', 'watch', 'wait-ready']) expect(help.stdout).toContain(command);
    expect((await runCli(['ls', '--bogus'], env)).code).toBe(2);
    expect((await runCli(['frobnicate'], env)).code).toBe(2);
    const badCount = await runCli(['register', 'orders', '10.0.0.5', '80', '--count', 'many'], env);
    expect(badCount.code).toBe(2);
    expect(badCount.stderr).toContain('--count: must be an integer');
    expect((await runCli(['ls', '--url', 'not a url'])).code).toBe(2);
    const port = await freePort();
    const unreachable = await runCli(['ls', '--url', `http://127.0.0.1:${port}`]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`cannot reach http://127.0.0.1:${port}`);
  });

  it('registers, lists, shows and cancels, as tables for people and JSON for scripts', async () => {
    const registered = await runCli(['register', 'cli-orders', '10.0.0.5', '8080', '--zone', 'a', '--weight', '2', '--metadata', 'version=1.4.2', '--metadata', 'team=pay', '--lease-ms', '60000'], env);
    expect(registered.code).toBe(0);
    expect(registered.stdout).toMatch(/INSTANCE\s+ADDRESS\s+STATUS/);
    expect(registered.stdout).toContain('10.0.0.5:8080');

    const services = await runCli(['ls'], env);
    expect(services.code).toBe(0);
    expect(services.stdout).toMatch(/SERVICE\s+INSTANCES\s+UP/);
    expect(services.stdout).toMatch(/cli-orders\s+1\s+1/);

    const instances = await runCli(['ls', 'cli-orders'], env);
    expect(instances.stdout).toMatch(/10\.0\.0\.5:8080\s+10\.0\.0\.5:8080\s+UP\s+a\s+2\s+peer-1\s+\d+(\.\d)?s/);

    const shown = await runCli(['show', 'cli-orders'], env);
    expect(shown.stdout).toContain('metadata    version=1.4.2, team=pay');
    expect(shown.stdout).toMatch(/lease\s+\S+ left of 1m00s/);

    const json = await runCli(['ls', 'cli-orders', '--json'], env);
    const listing = JSON.parse(json.stdout);
    expect(listing.instances[0]).toMatchObject({ instanceId: '10.0.0.5:8080', zone: 'a', weight: 2, metadata: { version: '1.4.2', team: 'pay' } });

    const cancelled = await runCli(['cancel', 'cli-orders', '10.0.0.5:8080'], env);
    expect(cancelled.code).toBe(0);
    expect((await callJson('GET', `${peer.url}/v1/services/cli-orders?status=all`)).body.instances).toEqual([]);
    const again = await runCli(['cancel', 'cli-orders', '10.0.0.5:8080'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('REG_ERR_INSTANCE_NOT_FOUND');
  });

  it('lists instances in natural order of their ids, and sets and shows a group', async () => {
    expect((await runCli(['register', 'natural', '10.7.0.1', '9000', '--id', '10.7.0', '--count', '21', '--group', 'canary', '--lease-ms', '600000'], env)).code).toBe(0);
    const ids = (await runCli(['ls', 'natural'], env)).stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/)[0]);
    expect(ids).toEqual(Array.from({ length: 21 }, (_, i) => `10.7.0-${i}`));
    const shown = await runCli(['show', 'natural'], env);
    expect(shown.stdout).toContain('natural (namespace default): 21 instances, 21 up');
    expect(shown.stdout).toMatch(/group\s+canary/);
    expect((await callJson('GET', `${peer.url}/v1/services/natural?group=canary`)).body.instances).toHaveLength(21);
    expect((await runCli(['register', 'cli-one', '10.0.0.1', '1', '--lease-ms', '600000'], env)).code).toBe(0);
    expect((await runCli(['show', 'cli-one'], env)).stdout).toContain('cli-one (namespace default): 1 instance, 1 up');
  }, 60_000);

  it('keeps namespaces apart with --namespace', async () => {
    // A long lease: the local profile's 3 s can run out while four command lines start on a loaded machine.
    expect((await runCli(['register', 'ns-svc', '10.0.0.9', '80', '-n', 'team-a', '--lease-ms', '600000'], env)).code).toBe(0);
    expect(JSON.parse((await runCli(['ls', '--json', '--namespace', 'team-a'], env)).stdout).services).toEqual([{ service: 'ns-svc', instances: 1, up: 1 }]);
    expect(JSON.parse((await runCli(['ls', 'ns-svc', '--json'], env)).stdout).instances).toEqual([]);
    expect(JSON.parse((await runCli(['ls', 'ns-svc', '--json'], { ...env, REGISTRY_NAMESPACE: 'team-a' })).stdout).instances).toHaveLength(1);
  });

  it('bulk-loads with --count, showing progress on stderr and keeping stdout for --json', async () => {
    const bulk = await runCli(['register', 'bulk', '10.1.0.1', '20000', '--count', '500', '--lease-ms', '600000', '--json'], env);
    expect(bulk.code).toBe(0);
    expect(JSON.parse(bulk.stdout)).toMatchObject({ service: 'bulk', registered: 500, failed: 0 });
    expect(bulk.stderr).toContain('registered 500/500 instances of bulk');
    expect(bulk.stderr).toMatch(/\[[#.]+\]\s+\d+% \d+\/500/);
    expect((await callJson('GET', `${peer.url}/v1/services/bulk`)).body.instances).toHaveLength(500);
  });

  it('watches a service live until Ctrl-C', async () => {
    const watch = spawnCli(['watch', 'watched'], env);
    running.push(watch);
    await watch.waitForOutput('= watched: 0 instances');
    await callJson('POST', `${peer.url}/v1/instances`, { service: 'watched', host: '10.0.0.1', port: 1, instanceId: 'w-1', leaseDurationMs: 600_000 });
    await watch.waitForOutput(/\+ watched {2}w-1 {2}10\.0\.0\.1:1 {2}UP/);
    await callJson('PUT', `${peer.url}/v1/services/watched/instances/w-1/status`, { status: 'DOWN' });
    await watch.waitForOutput(/~ watched {2}w-1 {2}10\.0\.0\.1:1 {2}DOWN/);
    await callJson('DELETE', `${peer.url}/v1/services/watched/instances/w-1`);
    await watch.waitForOutput(/- watched {2}w-1/);
    expect(await watch.stop('SIGINT')).toBe(0);

    const json = spawnCli(['watch', 'watched', '--json'], env);
    running.push(json);
    await json.waitForOutput('"event":"snapshot"');
    expect(JSON.parse(json.output().split('\n')[0]!)).toMatchObject({ event: 'snapshot', service: 'watched', instances: [] });
    expect(await json.stop('SIGINT')).toBe(0);
  });

  it('waits for readiness with progress, and gives up with exit 1', async () => {
    const ready = await runCli(['wait-ready', '--timeout', '10s'], env);
    expect(ready.code).toBe(0);
    expect(ready.stderr).toMatch(/peer-1: ready, 1\/1 peers up after/);
    const never = await runCli(['wait-ready', '--peers', '3', '--timeout', '1s'], env);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('not ready after 1.0s: peer-1: ready, 1/3 peers up');
  });

  it('sends the token as a bearer credential', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((request, response) => {
      seen.push(request.headers);
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ namespace: 'default', revision: 0, services: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      expect((await runCli(['ls', '--url', url, '--token', 's3cret'])).code).toBe(0);
      expect((await runCli(['ls', '--url', url], { REGISTRY_TOKEN: 'from-env' })).code).toBe(0);
      expect((await runCli(['ls', '--url', url])).code).toBe(0);
    } finally {
      server.close();
    }
    expect(seen.map((headers) => headers.authorization)).toEqual(['Bearer s3cret', 'Bearer from-env', undefined]);
  });

  it('trusts an https peer through --ca, and refuses it without', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-cli-tls-'));
    try {
      const key = join(dir, 'key.pem');
      const cert = join(dir, 'cert.pem');
      // A self-signed certificate for 127.0.0.1, made for this test (openssl, from Debian).
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert,
        '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      const server = createHttpsServer({ key: await readFile(key), cert: await readFile(cert) }, (_request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ namespace: 'default', revision: 0, services: [{ service: 'tls-svc', instances: 1, up: 1 }] }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      try {
        const trusted = await runCli(['ls', '--url', url, '--ca', cert]);
        expect(trusted.code, trusted.stderr).toBe(0);
        expect(trusted.stdout).toMatch(/tls-svc\s+1\s+1/);
        expect((await runCli(['ls', '--url', url], { REGISTRY_TLS_CA: cert })).code).toBe(0);
        const refused = await runCli(['ls', '--url', url]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/cannot reach .*(self.signed|certificate)/i);
        expect((await runCli(['ls', '--url', url, '--ca', join(dir, 'missing.pem')])).code).toBe(2);
      } finally {
        server.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('registry start, cluster and peers', () => {
  it('starts a peer like npm start, and stops it cleanly', async () => {
    const start = spawnCli(['start', '--port', '0', '--profile', 'local']);
    running.push(start);
    // The whole start line (the output is JSON into a pipe): it says where the peer listens.
    await start.waitForOutput(/"msg":"registry peer started".*\n/);
    const ready = await runCli(['wait-ready', '--timeout', '10s', '--url', startedUrl(start.output())!]);
    expect(ready.code).toBe(0);
    expect(await start.stop('SIGTERM')).toBe(0);
  });

  it('launches a local cluster, whose peers it shows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-cli-'));
    const file = join(dir, 'cluster.json');
    try {
      // The file names the ports, so they are picked beforehand: a peer whose port was taken
      // meanwhile exits, and the cluster starts again on fresh ports.
      const { cluster, url } = await onFreshPorts(2, async (ports) => {
        await writeFile(
          file,
          JSON.stringify({
            cluster: { name: 'cli', profile: 'local' },
            peers: ports.map((port, i) => ({ id: `p${i}`, url: `http://127.0.0.1:${port}`, region: 'local', zone: `z${i}` })),
          }),
        );
        const cluster = spawnCli(['cluster', '--config', file]);
        running.push(cluster);
        await clusterStarted(cluster, ['p0', 'p1']);
        return { cluster, url: `http://127.0.0.1:${ports[0]}` };
      });
      const ready = await runCli(['wait-ready', '--peers', '2', '--timeout', '20s', '--url', url]);
      expect(ready.code, ready.stderr).toBe(0);
      // A slow probe on a loaded machine can show p1 suspect for a moment: wait until it is up.
      const peers = await waitFor(async () => {
        const shown = await runCli(['peers', '--url', url]);
        return /p1\s+up\s/.test(shown.stdout) && shown;
      }, 20_000, 'p0 to show p1 up');
      expect(peers.stdout).toContain('cluster cli (profile local), seen from p0');
      expect(peers.stdout).toMatch(/p1\s+up\s+local\s+z1\s+\S+ ago/);
      expect(peers.stdout).toMatch(/self-preservation: off/);
      expect(JSON.parse((await runCli(['peers', '--json', '--url', url])).stdout).peers[0]).toMatchObject({ id: 'p1', state: 'up' });
      expect(await cluster.stop('SIGINT')).toBe(0);
      expect(cluster.output()).toMatch(/\[p0\] .*registry peer started/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('shows a peer turning down in a real cluster', async () => {
    const real = await RealCluster.start({ size: 2 });
    try {
      const url = real.url('peer-a');
      await real.kill('peer-b');
      await waitFor(async () => (await runCli(['peers', '--url', url])).stdout.match(/peer-b\s+down/), 15_000, 'peer-b down');
      const never = await runCli(['wait-ready', '--timeout', '1s', '--url', url]);
      expect(never.code).toBe(1);
    } finally {
      await real.stop();
    }
  });
});

describe('registry register --heartbeat and Ctrl-C', () => {
  it('cancels the instances with a progress line and exits at once, not at the next heartbeat', async () => {
    // A peer that asks for a heartbeat every 30 s: waiting for the next one would take that long.
    const dir = await mkdtemp(join(tmpdir(), 'registry-cli-hb-'));
    const file = join(dir, 'slow-heartbeats.json');
    await writeFile(file, JSON.stringify({ cluster: { heartbeatIntervalMs: 30_000, leaseDurationMs: 120_000 } }));
    const slow = await startPeerProcess(['--config', file, '--port', '0']);
    try {
      const register = spawnCli(['register', 'hb', '10.9.0.1', '7000', '--count', '20', '--heartbeat', '--group', 'canary'], { REGISTRY_URL: slow.url });
      running.push(register);
      await waitFor(() => register.errors().includes('heartbeating 20 instances every 30s'), 15_000, 'the heartbeat loop');
      const listed = (await callJson('GET', `${slow.url}/v1/services/hb?status=all`)).body.instances as { group: string }[];
      expect(listed).toHaveLength(20);
      expect(new Set(listed.map((instance) => instance.group))).toEqual(new Set(['canary']));

      const stoppedAt = Date.now();
      expect(await register.stop('SIGINT')).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      expect(register.errors()).toContain('cancelled 20/20 instances of hb');
      expect((await callJson('GET', `${slow.url}/v1/services/hb?status=all`)).body.instances).toEqual([]);
    } finally {
      slow.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('exits at once on a second Ctrl-C, while the cancels still wait', async () => {
    // A peer stand-in that registers and heartbeats but never answers a cancel.
    const cancels: string[] = [];
    const server = createServer((request, response) => {
      if (request.method === 'DELETE') return void cancels.push(request.url ?? '');
      response.setHeader('content-type', 'application/json');
      const id = `i-${cancels.length}`;
      response.end(JSON.stringify({ instanceId: id, host: '10.0.0.1', port: 1, status: 'UP', owner: 'stand-in', heartbeatIntervalMs: 60_000 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const register = spawnCli(['register', 'hb2', '10.0.0.1', '1', '--heartbeat'], { REGISTRY_URL: url });
      running.push(register);
      await waitFor(() => register.errors().includes('heartbeating 1 instance every 1m00s'), 15_000, 'the heartbeat loop');
      register.child.kill('SIGINT');
      await waitFor(() => cancels.length === 1, 10_000, 'the cancel to be sent');
      expect(await register.stop('SIGINT')).toBe(130);
      expect(register.errors()).toContain('SIGINT again: exiting now');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

/**
 * Waits until every peer `registry cluster` runs has started or exited. A peer that exited
 * fails the start with why it did (its fatal line; `addressInUse` when its port was taken),
 * once the cluster is stopped.
 */
async function clusterStarted(cluster: CliProcess, ids: string[]): Promise<void> {
  const width = Math.max(...ids.map((id) => id.length));
  const linesOf = (id: string) => {
    const prefix = `[${id.padEnd(width)}] `;
    return cluster.output().split('\n').filter((line) => line.startsWith(prefix)).map((line) => line.slice(prefix.length));
  };
  const exitOf = (id: string) => linesOf(id).find((line) => /^exited \(\w+\)$/.test(line));
  const started = (id: string) => linesOf(id).some((line) => line.includes('"msg":"registry peer started"'));
  await waitFor(() => ids.every((id) => exitOf(id) !== undefined || started(id)), 30_000, 'every peer to start or exit').catch((error: Error) => {
    throw new Error(`${error.message}; got:\n${cluster.output()}`);
  });
  const exited = ids.find((id) => exitOf(id) !== undefined);
  if (exited === undefined) return;
  await cluster.stop('SIGINT');
  const logs: Record<string, unknown>[] = [];
  const other: string[] = [];
  for (const line of linesOf(exited)) {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      other.push(line);
    }
  }
  const end = /^exited \((\w+)\)$/.exec(exitOf(exited)!)![1]!;
  throw startFailure(/^\d+$/.test(end) ? { code: Number(end), signal: null } : { code: null, signal: end as NodeJS.Signals }, logs, other.join('\n'));
}
