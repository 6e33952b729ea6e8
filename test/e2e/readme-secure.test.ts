import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/fault-proxy.js';
import { onFreshPorts } from '../support/ports.js';
import { projectRoot, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * Follows the README's "Expose it on a network" section word for word: its openssl commands
 * make the certificates, its exports make the secret and the token, its cluster file and
 * start commands start two peers (on free ports instead of 8761/8762, in a temporary
 * directory), and its curl commands register on one peer and read on the other, over TLS.
 * Then it checks what the section promises: no token 401, client certificates grant nothing,
 * the peer routes take a peer certificate and nothing a client holds.
 */

const started: PeerProcess[] = [];
let dir = '';
afterEach(async () => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function readmeBlock(): Promise<string> {
  const readme = await readFile(join(projectRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('## Expose it on a network');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('no sh block in the README section "Expose it on a network"');
  return block;
}

/** Runs shell text with bash in the temporary directory; fails the test on a non-zero exit. */
function bash(script: string, env: Record<string, string> = {}): string {
  const result = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`bash failed (${result.status}): ${result.stderr}\n${script}`);
  return result.stdout;
}

describe('the README walk-through: two peers on 0.0.0.0 with TLS, mTLS, signing and a token', () => {
  it('works as written', async () => {
    dir = await mkdtemp(join(tmpdir(), 'registry-readme-'));
    // The cluster file names the ports, so they are picked beforehand; when one was taken
    // before its peer listened, steps 1-4 run again on fresh ports.
    const { portA, portB, env, usage, peers } = await onFreshPorts(2, async ([portA, portB]) => {
      const text = (await readmeBlock()).replaceAll('8761', String(portA)).replaceAll('8762', String(portB));
      const lines = text.replace(/\\\n\s*/g, '').split('\n');
      const starts = lines.filter((line) => line.startsWith('npm start -- '));
      expect(starts).toHaveLength(2);
      const setup = lines.slice(0, lines.indexOf(starts[0]!)).join('\n');
      const usage = lines.slice(lines.indexOf(starts[1]!) + 1).filter((line) => line.startsWith('curl '));
      expect(usage).toHaveLength(2);

      // Steps 1-3: certificates, secret and token, cluster file.
      const envOut = bash(`${setup}\nenv`);
      const env = Object.fromEntries(
        envOut
          .split('\n')
          .filter((line) => /^(REGISTRY_CLUSTER_SECRET|REGISTRY_TOKENS|TOKEN)=/.test(line))
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      ) as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(['REGISTRY_CLUSTER_SECRET', 'REGISTRY_TOKENS', 'TOKEN']);
      expect(env.REGISTRY_TOKENS).not.toContain(env.TOKEN);

      // Step 4: both peers, as `npm start -- ...` runs them (node dist/main.js ...). Each start
      // is waited for: when one fails, the other is stopped before the next try.
      const results = await Promise.allSettled(
        starts.map((line) => startPeerProcess(line.slice('npm start -- '.length).split(/\s+/), env, undefined, dir)),
      );
      const peers = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      started.push(...peers);
      const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) {
        for (const peer of peers) peer.kill('SIGKILL');
        await Promise.all(peers.map((peer) => peer.exited));
        throw failed.reason;
      }
      return { portA: portA!, portB: portB!, env, usage, peers };
    });
    for (const peer of peers) {
      expect(peer.logs.find((line) => line.msg === 'registry peer started')).toMatchObject({ address: expect.stringMatching(/^0\.0\.0\.0:/) });
      // Fully guarded and on TLS: no safety warning at start (the start-up sync may warn that
      // the other peer is not up yet).
      expect(peer.logs.filter((line) => line.level === 40 && /dev mode|open|insecure|TLS/.test(String(line.msg)))).toEqual([]);
    }

    // Step 5: register on peer-a, read it back from peer-b once replicated.
    const registered = JSON.parse(bash(usage[0]!, env)) as Record<string, unknown>;
    expect(registered).toMatchObject({ service: 'orders', host: '10.0.0.5', port: 8080, owner: 'peer-a' });
    await waitFor(() => (JSON.parse(bash(usage[1]!, env)) as { instances: unknown[] }).instances.length === 1, 15_000, 'peer-b to list the register');

    // What the section promises besides.
    const urlA = `https://127.0.0.1:${portA}`;
    const curl = (args: string) => bash(`curl -s -o /dev/null -w '%{http_code}' --cacert tls/ca.crt ${args}`, env);
    expect(curl(`${urlA}/v1/services/orders`)).toBe('401');
    expect(curl(`-H "authorization: Bearer wrong-token" ${urlA}/v1/services/orders`)).toBe('401');
    expect(curl(`-H "authorization: Bearer $REGISTRY_CLUSTER_SECRET" ${urlA}/v1/services/orders`)).toBe('401');
    // A peer certificate is no client credential.
    expect(curl(`--cert tls/peer-b.crt --key tls/peer-b.key ${urlA}/v1/services/orders`)).toBe('401');
    const ping = `-X POST -H 'content-type: application/json' -d '{"from":{"id":"peer-b","url":"https://127.0.0.1:${portB}","region":"default","zone":""},"members":[]}' ${urlA}/v1/peer/ping`;
    expect(curl(`--cert tls/peer-b.crt --key tls/peer-b.key ${ping}`)).toBe('200');
    expect(curl(ping)).toBe('401');
    expect(curl(`-H "authorization: Bearer $TOKEN" ${ping}`)).toBe('401');
    // Plain HTTP to a TLS port gets nowhere; the health probe needs nothing.
    expect(bash(`curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${portA}/healthz || true`)).not.toBe('200');
    expect(curl(`${urlA}/healthz`)).toBe('200');

    // The Docker health check finds the peer from the same configuration, over HTTPS.
    const healthcheck = (port: number) =>
      spawnSync(process.execPath, [join(projectRoot, 'dist/cli/healthcheck.js')], {
        cwd: dir,
        env: { ...process.env, ...env, REGISTRY_CONFIG: 'secure-cluster.json', REGISTRY_ID: 'peer-a', REGISTRY_PORT: String(port), REGISTRY_TLS_CERT: 'tls/peer-a.crt', REGISTRY_TLS_KEY: 'tls/peer-a.key' },
        timeout: 10_000,
      }).status;
    expect(healthcheck(portA)).toBe(0);
    expect(healthcheck(await freePort())).toBe(1);
  }, 90_000);
});
