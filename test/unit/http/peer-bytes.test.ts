import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { buildServer } from '../../../src/http/server.js';
import { silentLogger } from '../../../src/log/logger.js';
import { RegistryNode } from '../../../src/node.js';
import { HttpTransport } from '../../../src/transport/http-transport.js';
import { FakeClock } from '../../support/fake-clock.js';
import { testConfig } from '../../support/node.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

/**
 * The responder's side of registry_peer_bytes_total: the peer routes count what a caller sent
 * (its request as it travelled) and what they answered, into the HTTP transport's counts. A
 * peer of one with an HTTP transport (it calls nobody), driven with inject: no socket.
 */
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function peer() {
  const config = testConfig({ cluster: { compressMinBytes: 64 } });
  const transport = new HttpTransport({ connectionsPerPeer: 1, connectTimeoutMs: 1_000, selfRegion: 'r', compressMinBytes: 64, selfId: config.self.id });
  const node = new RegistryNode({ clock: new FakeClock(), rng: seededRng(1), logger: silentLogger, transport }, config);
  await node.start();
  const app = await buildServer({ node });
  await app.ready();
  close = async () => {
    await app.close();
    await node.stop();
    await transport.close();
  };
  const bytes = async (peerId: string, call: string, direction: string) =>
    sampleValue(parsePrometheusText((await app.inject({ url: '/metrics' })).body), 'registry_peer_bytes_total', { peer: peerId, call, direction });
  return { app, transport, bytes };
}

describe('the peer routes count the bytes of the calls they answer', () => {
  it('counts a request as it came and the answer as it went, by caller and call', async () => {
    const { app, bytes } = await peer();
    const body = JSON.stringify({ from: 'peer-x', root: 'not-ours' });
    const answer = await app.inject({ method: 'POST', url: '/v1/peer/digest', payload: body, headers: { 'content-type': 'application/json' } });
    expect(answer.statusCode).toBe(200);
    expect(await bytes('peer-x', 'digest', 'received')).toBe(Buffer.byteLength(body));
    expect(await bytes('peer-x', 'digest', 'sent')).toBe(answer.rawPayload.length);

    // A ping names its caller in a descriptor; a gzip request counts its compressed bytes, a gzip answer too.
    const ping = JSON.stringify({ from: { id: 'peer-y', url: 'http://127.0.0.1:1', region: 'r', zone: 'z' }, membersHash: 'x', members: [] });
    const gzipped = gzipSync(ping);
    const pong = await app.inject({
      method: 'POST',
      url: '/v1/peer/ping',
      payload: gzipped,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'accept-encoding': 'gzip' },
    });
    expect(pong.statusCode).toBe(200);
    expect(await bytes('peer-y', 'ping', 'received')).toBe(gzipped.length);
    expect(await bytes('peer-y', 'ping', 'sent')).toBe(pong.rawPayload.length);
  });

  it('counts nothing for an unknown call or a body that names no caller', async () => {
    const { app } = await peer();
    expect((await app.inject({ method: 'POST', url: '/v1/peer/steal', payload: { from: 'peer-x' } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: '/v1/peer/digest', payload: { root: 'x' } })).statusCode).toBe(400);
    const family = parsePrometheusText((await app.inject({ url: '/metrics' })).body).get('registry_peer_bytes_total');
    expect(family?.samples).toEqual([]);
  });
});
