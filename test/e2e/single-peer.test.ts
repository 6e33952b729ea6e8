import { afterEach, describe, expect, it } from 'vitest';
import { requestJson as json } from '../support/http.js';
import { runPeerToExit, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

const started: PeerProcess[] = [];
afterEach(() => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
});

describe('one peer as a real process', () => {
  it('serves the client API over HTTP and stops cleanly on SIGTERM', async () => {
    const peer = await startPeerProcess(['--port', '0', '--host', '127.0.0.1', '--profile', 'local']);
    started.push(peer);
    expect((await json('GET', `${peer.url}/readyz`)).status).toBe(200);

    const registered = await json('POST', `${peer.url}/v1/instances`, {
      service: 'orders',
      host: '127.0.0.1',
      port: 9001,
      leaseDurationMs: 1_000,
    });
    expect(registered.status).toBe(201);
    expect((await json('PUT', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001/heartbeat`)).status).toBe(200);
    expect((await json('GET', `${peer.url}/v1/services/orders`)).body.instances).toHaveLength(1);

    // No more heartbeats: the reaper evicts it once its 1 s lease has run out.
    await waitFor(
      async () => (await json('GET', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001`)).status === 404,
      10_000,
      'the eviction',
    );
    expect(peer.logs.some((line) => line.msg === 'instance evicted')).toBe(true);
    expect((await json('PUT', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001/heartbeat`)).status).toBe(404);

    const bad = await json('POST', `${peer.url}/v1/instances`, { service: 'orders', host: 'x y', port: 1 });
    expect(bad).toEqual({ status: 400, body: { code: 'REG_ERR_VALIDATION', message: 'host: must be a host name or an IP address' } });

    peer.kill('SIGTERM');
    expect(await peer.exited).toBe(0);
    expect(peer.logs.map((line) => line.msg)).toContain('stopped');
  });

  it('exits with code 2 and names the field for a bad configuration', async () => {
    const result = await runPeerToExit(['--port', 'http'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--port: must be an integer from 0 to 65535');
    const fromEnv = await runPeerToExit([], { REGISTRY_LOG_LEVEL: 'chatty' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('REGISTRY_LOG_LEVEL: must be one of');
  });
});
