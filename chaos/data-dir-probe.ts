/**
 * Does the peer binary keep what it acknowledged in its data dir across a SIGKILL? Runs one
 * throwaway peer with `--data-dir`, registers an instance, kills it, starts it again on the same
 * dir, alone, and asks for the instance. The chaos run restarts peers "with their data dir"
 * only when this holds; otherwise that variant is skipped with the reason.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callJson } from '../test/support/http.js';
import { startPeerProcess, type PeerProcess } from '../test/support/process.js';

export interface DataDirSupport {
  durable: boolean;
  reason: string;
}

export async function probeDataDir(): Promise<DataDirSupport> {
  const dir = await mkdtemp(join(tmpdir(), 'registry-probe-'));
  // Info level: startPeerProcess learns the port from the "registry peer started" line.
  const args = (port: string) => ['--host', '127.0.0.1', '--port', port, '--profile', 'local', '--log-level', 'info', '--data-dir', dir];
  const started: PeerProcess[] = [];
  try {
    let peer: PeerProcess;
    try {
      peer = await startPeerProcess(args('0'));
    } catch (error) {
      return { durable: false, reason: `the peer refuses --data-dir: ${(error as Error).message.split('\n')[0]}` };
    }
    started.push(peer);
    const registered = await callJson('POST', `${peer.url}/v1/instances`, {
      service: 'probe',
      host: '127.0.0.1',
      port: 9,
      instanceId: 'probe-1',
      leaseDurationMs: 600_000,
    });
    if (registered.status !== 201) return { durable: false, reason: `register answered ${registered.status}` };
    // Let an interval sync policy write it out (a SIGKILL keeps what reached the OS anyway).
    await new Promise((resolve) => setTimeout(resolve, 500));
    peer.kill('SIGKILL');
    await peer.exited;
    const again = await startPeerProcess(args(new URL(peer.url).port));
    started.push(again);
    const found = await callJson('GET', `${again.url}/v1/services/probe/instances/probe-1`);
    return found.status === 200
      ? { durable: true, reason: 'a registration survived a SIGKILL and a restart on the same data dir' }
      : { durable: false, reason: `the peer accepts --data-dir but keeps nothing in it (after a SIGKILL and a restart the instance is unknown: ${found.status})` };
  } finally {
    for (const peer of started) peer.kill('SIGKILL');
    await Promise.all(started.map((peer) => peer.exited));
    await rm(dir, { recursive: true, force: true });
  }
}
