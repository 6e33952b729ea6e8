import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { parsePrometheusText, sampleValue, type Family } from '../support/prom-text.js';
import { RealCluster } from '../support/real-cluster.js';

/**
 * Bytes between peers and the start-up sync, as `/metrics` shows them, on two real peers that
 * talk over HTTP (the byte counts live in the HTTP transport and the peer routes).
 */
let cluster: RealCluster;

beforeAll(async () => {
  cluster = await RealCluster.start({ size: 2 });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

async function scrape(peerId: string): Promise<Map<string, Family>> {
  const response = await request(`${cluster.url(peerId)}/metrics`);
  expect(response.statusCode).toBe(200);
  return parsePrometheusText(await response.body.text());
}

const bytes = (metrics: Map<string, Family>, peer: string, call: string, direction: string) =>
  sampleValue(metrics, 'registry_peer_bytes_total', { peer, call, direction }) ?? 0;

describe('peer traffic and the start-up sync in /metrics', () => {
  it('counts the same replication bytes on both sides, and a restarted peer’s catch-up', async () => {
    for (let i = 0; i < 40; i++) {
      const answer = await callJson('POST', `${cluster.url('peer-a')}/v1/instances`, { service: `svc-${i % 4}`, host: '10.0.0.5', port: 8000 + i, leaseDurationMs: 600_000 });
      expect(answer.status).toBe(201);
    }
    await waitFor(async () => (await callJson('GET', `${cluster.url('peer-b')}/v1/services`)).body.services?.length === 4, 15_000, 'peer-b to hold the 4 services');
    // What peer-a sent to peer-b in replicate calls is what peer-b received from it, and the other way round.
    const settled = await waitFor(
      async () => {
        const [a, b] = [await scrape('peer-a'), await scrape('peer-b')];
        const sent = bytes(a, 'peer-b', 'replicate', 'sent');
        const answered = bytes(a, 'peer-b', 'replicate', 'received');
        return sent > 0 && sent === bytes(b, 'peer-a', 'replicate', 'received') && answered === bytes(b, 'peer-a', 'replicate', 'sent') ? { a, b } : false;
      },
      15_000,
      'both sides to count the same replicate bytes',
    );
    // 40 registrations of ~300 bytes each at least went over.
    expect(bytes(settled.a, 'peer-b', 'replicate', 'sent')).toBeGreaterThan(40 * 200);
    // Probes run on their own interval (cluster.probeIntervalMs), so wait for the first rather than assume it went.
    await waitFor(async () => bytes(await scrape('peer-a'), 'peer-b', 'ping', 'sent') > 0, 15_000, 'peer-a to count a ping it sent to peer-b');

    // peer-a answered peer-b's first start-up sync too (an empty registry then): count from here.
    const snapshotBefore = bytes(await scrape('peer-a'), 'peer-b', 'snapshot-stream', 'sent');
    await cluster.kill('peer-b');
    await cluster.startPeer('peer-b');
    await cluster.waitReady('peer-b');
    const restarted = await scrape('peer-b');
    expect(sampleValue(restarted, 'registry_startup_sync_records', {})).toBe(40);
    expect(sampleValue(restarted, 'registry_startup_sync_seconds', {})).toBeGreaterThan(0);
    // The catch-up is one snapshot stream (no pages between peers of this version).
    expect(bytes(restarted, 'peer-a', 'snapshot-stream', 'received')).toBeGreaterThan(40 * 200);
    expect(bytes(restarted, 'peer-a', 'snapshot', 'received')).toBe(0);
    const a = await waitFor(async () => {
      const metrics = await scrape('peer-a');
      return bytes(metrics, 'peer-b', 'snapshot-stream', 'sent') - snapshotBefore >= bytes(restarted, 'peer-a', 'snapshot-stream', 'received') ? metrics : false;
    }, 10_000, 'peer-a to count the snapshot stream it answered');
    expect(bytes(a, 'peer-b', 'snapshot-stream', 'sent') - snapshotBefore).toBe(bytes(restarted, 'peer-a', 'snapshot-stream', 'received'));
  }, 90_000);
});
