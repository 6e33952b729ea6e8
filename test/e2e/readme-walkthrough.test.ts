import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { onFreshPorts } from '../support/ports.js';
import { projectRoot, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * The README's first sections as a newcomer follows them: `npm start` (readable logs on a
 * terminal, exit 0 on Ctrl-C, exit 2 on an unknown flag), the fourth peer of "A cluster on one
 * machine" (its command as written, on free ports), and the data dir of "Durable peers" kept
 * out of git. The "Expose it on a network" section has its own test (readme-secure.test.ts).
 */

const readme = await readFile(join(projectRoot, 'README.md'), 'utf8');
const section = (title: string) => {
  const start = readme.indexOf(`## ${title}`);
  if (start < 0) throw new Error(`no README section "${title}"`);
  return readme.slice(start, readme.indexOf('\n## ', start + 1));
};

interface Started {
  child: ChildProcess;
  output: () => string;
  closed: Promise<number | null>;
}

const groups: Started[] = [];
const peers: PeerProcess[] = [];
afterEach(() => {
  // Only the process groups and peers this file started, by their ids.
  for (const started of groups.splice(0)) if (started.child.exitCode === null && started.child.signalCode === null) process.kill(-started.child.pid!, 'SIGKILL');
  for (const peer of peers.splice(0)) peer.kill('SIGKILL');
});

/** Runs a command in its own process group (as a shell runs a foreground job), output collected. */
function startGroup(command: string, args: string[]): Started {
  // None of the caller's REGISTRY_* settings leak in: the README's commands run as written.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('REGISTRY_')));
  const child = spawn(command, args, { cwd: projectRoot, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const started = { child, output: () => output, closed };
  groups.push(started);
  return started;
}

describe('the README walk-through: the first five minutes', () => {
  it('npm start stops on Ctrl-C with exit 0, and refuses an unknown flag with exit 2', async () => {
    expect(section('The first five minutes')).toContain('npm ci && npm start');
    const npm = startGroup('npm', ['start', '--', '--port', '0', '--profile', 'local']);
    await waitFor(() => npm.output().includes('registry peer started'), 30_000, `npm start to start; got:\n${npm.output()}`);
    // Ctrl-C on a terminal: SIGINT to the whole foreground process group (npm, node).
    process.kill(-npm.child.pid!, 'SIGINT');
    expect(await npm.closed).toBe(0);

    const bogus = startGroup('npm', ['start', '--', '--bogus']);
    expect(await bogus.closed).toBe(2);
    expect(bogus.output()).toContain("unknown option '--bogus'");
  }, 60_000);

  it('logs readable lines on a terminal and JSON into a pipe', async () => {
    // `script` gives the peer a real terminal (a pseudo-terminal) as its standard output.
    const onTerminal = startGroup('script', ['-qec', 'exec node dist/main.js --port 0 --profile local', '/dev/null']);
    // Colours too, on a terminal that has them: compared without them.
    const plain = () => onTerminal.output().replace(/\x1b\[[0-9;]*m/g, '');
    await waitFor(() => /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: registry peer started \{"peer":"peer-1"/m.test(plain()), 30_000, `a readable start line; got:\n${onTerminal.output()}`);
    expect(plain()).not.toContain('{"level"');
    process.kill(-onTerminal.child.pid!, 'SIGTERM');
    await onTerminal.closed;

    const piped = await startPeerProcess(['--port', '0', '--profile', 'local']);
    peers.push(piped);
    expect(piped.logs.find((line) => line.msg === 'registry peer started')).toMatchObject({ level: 30 });
  }, 60_000);
});

describe('the README walk-through: a cluster on one machine', () => {
  it('starts the fourth peer, as written, in the region of the others', async () => {
    const command = /^npm start -- --config cluster\.example\.json --id peer-d .*$/m.exec(section('A cluster on one machine'))?.[0];
    if (!command) throw new Error('no peer-d command in the README section "A cluster on one machine"');
    const dir = await mkdtemp(join(tmpdir(), 'registry-readme-cluster-'));
    try {
      // cluster.example.json on free ports; the README's command on them too. The file names
      // the ports, so they are picked beforehand; when one was taken before its peer listened,
      // both peers start again on fresh ones. No known URL: each peer's own start line tells
      // when it is up (not whatever answers on its port).
      const [peerA, peerD] = await onFreshPorts(4, async (free) => {
        const ports = new Map(['8761', '8762', '8763', '8764'].map((known, i) => [known, free[i]!]));
        const onFreePorts = (text: string) => text.replace(/876[1-4]/g, (known) => String(ports.get(known)));
        await writeFile(join(dir, 'cluster.example.json'), onFreePorts(await readFile(join(projectRoot, 'cluster.example.json'), 'utf8')));
        const peerA = await startPeerProcess(['--config', 'cluster.example.json', '--id', 'peer-a', '--profile', 'local'], {}, undefined, dir);
        peers.push(peerA);
        const args = onFreePorts(command).slice('npm start -- '.length).split(/\s+/);
        try {
          const peerD = await startPeerProcess([...args, '--profile', 'local'], {}, undefined, dir);
          peers.push(peerD);
          expect([peerA.url, peerD.url]).toEqual([`http://127.0.0.1:${ports.get('8761')}`, `http://127.0.0.1:${ports.get('8764')}`]);
          return [peerA, peerD];
        } catch (error) {
          peerA.kill('SIGKILL');
          await peerA.exited;
          throw error;
        }
      });

      const self = (await callJson('GET', `${peerD.url}/v1/cluster`)).body.self as { id: string; region: string; zone: string };
      expect(self).toMatchObject({ id: 'peer-d', region: 'local', zone: 'd' });
      await waitFor(
        async () => ((await callJson('GET', `${peerA.url}/v1/cluster`)).body.peers as { id: string; region: string; state: string }[])
          .some((peer) => peer.id === 'peer-d' && peer.region === 'local' && peer.state === 'up'),
        15_000,
        'peer-a to know peer-d, up, in region local',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the README walk-through: durable peers', () => {
  it('keeps the data dir of its examples out of git', async () => {
    const dataDir = /--data-dir \.\/(\w+)/.exec(section('Durable peers'))?.[1];
    expect(dataDir).toBe('data');
    const ignored = (await readFile(join(projectRoot, '.gitignore'), 'utf8')).split('\n').map((line) => line.trim());
    expect(ignored.some((pattern) => [`/${dataDir}/`, `${dataDir}/`, `/${dataDir}`].includes(pattern))).toBe(true);
  });
});
