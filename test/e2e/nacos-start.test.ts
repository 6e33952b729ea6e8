import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/fault-proxy.js';
import { runPeerToExit } from '../support/process.js';

/** A peer whose Nacos ports are taken stops with one line naming the listener and the setting that moves it. */
const holders: Server[] = [];
afterEach(async () => {
  for (const holder of holders.splice(0)) await new Promise((resolve) => holder.close(resolve));
});

async function hold(port: number): Promise<void> {
  const holder = createServer();
  holders.push(holder);
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen(port, '127.0.0.1', resolve);
  });
}

async function portWithFreeGrpcPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port <= 64_000) return port;
  }
}

function oneLine(result: { code: number | null; stderr: string }): string {
  expect(result.code).toBe(2);
  const lines = result.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('Nacos ports in use', () => {
  it('names the Nacos listener when its HTTP port is taken', async () => {
    const port = await portWithFreeGrpcPort();
    await hold(port);
    const line = oneLine(await runPeerToExit(['--port', '0', '--host', '127.0.0.1', '--nacos-port', String(port)]));
    expect(line).toContain(`registry: cannot listen on 127.0.0.1:${port} (the Nacos listener): the port is already in use`);
    expect(line).toContain('--nacos-port');
  }, 60_000);

  it('names the Nacos gRPC listener and nacos.grpcPort when port + 1000 is taken', async () => {
    const port = await portWithFreeGrpcPort();
    await hold(port + 1_000);
    const line = oneLine(await runPeerToExit(['--port', '0', '--host', '127.0.0.1', '--nacos-port', String(port)]));
    expect(line).toContain(`registry: cannot listen on 127.0.0.1:${port + 1_000} (the Nacos gRPC listener): the port is already in use`);
    expect(line).toContain('nacos.grpcPort');
  }, 60_000);
});
