import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

const started: PeerProcess[] = [];
afterEach(() => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
});

/** Runs `test` against a peer started with these `cluster` settings (a file in a temporary directory). */
async function withPeer(cluster: Record<string, unknown>, test: (peer: PeerProcess) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'registry-watch-'));
  const file = join(dir, 'peer.json');
  await writeFile(file, JSON.stringify({ cluster }));
  try {
    const peer = await startPeerProcess(['--port', '0', '--config', file]);
    started.push(peer);
    await test(peer);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Reads a server-sent events stream into parsed events (and comments). */
async function openStream(url: string) {
  const events: { event: string; data: unknown }[] = [];
  const comments: string[] = [];
  const abort = new AbortController();
  const response = await request(url, { signal: abort.signal });
  let buffer = '';
  const reading = (async () => {
    try {
      for await (const chunk of response.body) {
        buffer += chunk.toString();
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data) events.push({ event, data: JSON.parse(data) });
        }
      }
    } catch {
      // aborted
    }
  })();
  return { response, events, comments, close: async () => (abort.abort(), await reading) };
}

describe('watch stream over real HTTP', () => {
  it('streams a snapshot, then coalesced deltas, and ends cleanly on shutdown', async () => {
    const peer = await startPeerProcess(['--port', '0', '--profile', 'local']);
    started.push(peer);
    const stream = await openStream(`${peer.url}/v1/watch?services=orders`);
    expect(stream.response.headers['content-type']).toContain('text/event-stream');
    await waitFor(() => stream.events.length >= 1, 5_000, 'the snapshot');
    expect(stream.events[0]).toEqual({ event: 'snapshot', data: { namespace: 'default', service: 'orders', revision: 0, instances: [] } });

    await Promise.all(
      ['a', 'b', 'c'].map((id) => callJson('POST', `${peer.url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId: id })),
    );
    // A quiet service is pushed at once and a burst gathered (docs/api.md): three registrations
    // sent together come as one delta or, when they reach the peer further apart than the
    // gathering window (a loaded machine), as several; each instance is added exactly once.
    const added = () =>
      stream.events
        .filter((e) => e.event === 'delta')
        .flatMap((e) => (e.data as { added: { instanceId: string }[] }).added.map((i) => i.instanceId));
    await waitFor(() => added().length >= 3, 5_000, 'the deltas adding a, b and c');
    expect(added().sort()).toEqual(['a', 'b', 'c']);

    const stopped = peer.exited;
    peer.kill('SIGTERM');
    expect(await stopped).toBe(0);
    await stream.close();
  });

  it('writes a snapshot of thousands of instances in pieces, whole, with a change made meanwhile after it', async () => {
    await withPeer({}, async (peer) => {
      // More than 2 x SNAPSHOT_PIECE_INSTANCES: the snapshot goes a piece a turn (src/watch/events.ts).
      const count = 2_100;
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < count; i = next++) {
            const answer = await callJson('POST', `${peer.url}/v1/instances`, { service: 'big', host: '10.0.0.1', port: 1 + i, instanceId: `i-${i}` });
            expect(answer.status).toBe(201);
          }
        }),
      );
      const stream = await openStream(`${peer.url}/v1/watch?services=big`);
      // Registered while the snapshot may still be on its way: after it, as a delta.
      await callJson('POST', `${peer.url}/v1/instances`, { service: 'big', host: '10.0.0.2', port: 1, instanceId: 'late' });
      const added = () => stream.events.filter((e) => e.event === 'delta').flatMap((e) => (e.data as { added: { instanceId: string }[] }).added.map((i) => i.instanceId));
      const inSnapshot = () => ((stream.events[0]?.data as { instances?: { instanceId: string }[] } | undefined)?.instances ?? []).map((i) => i.instanceId);
      await waitFor(() => inSnapshot().includes('late') || added().includes('late'), 20_000, 'the late instance, in the snapshot or a delta after it');
      expect(stream.events[0]!.event).toBe('snapshot');
      const ids = inSnapshot();
      expect(ids.filter((id) => id !== 'late')).toHaveLength(count);
      expect(new Set(ids).size).toBe(ids.length);
      // Told exactly once, whichever way.
      expect(Number(ids.includes('late')) + added().filter((id) => id === 'late').length).toBe(1);
      await stream.close();
    });
  });

  it('sends keep-alive comments on an idle stream', async () => {
    await withPeer({ watchKeepAliveMs: 1_000 }, async (peer) => {
      const stream = await openStream(`${peer.url}/v1/watch`);
      await waitFor(() => stream.comments.includes('keep-alive'), 10_000, 'a keep-alive comment');
      await stream.close();
    });
  });

  it('sends first snapshots larger than watchMaxBufferedBytes whole, and keeps the stream', async () => {
    await withPeer({ watchMaxBufferedBytes: 1_024 }, async (peer) => {
      for (const service of ['big', 'big2']) {
        for (let i = 0; i < 40; i++) {
          await callJson('POST', `${peer.url}/v1/instances`, { service, host: '10.0.0.1', port: 1000 + i, metadata: { note: 'x'.repeat(200) } });
        }
      }
      // Every service of the namespace: two snapshots, each far larger than the limit.
      const stream = await openStream(`${peer.url}/v1/watch`);
      await waitFor(() => stream.events.length >= 2, 5_000, 'the snapshots');
      for (const [index, service] of ['big', 'big2'].entries()) {
        const snapshot = stream.events[index]!;
        expect(snapshot.event).toBe('snapshot');
        expect(snapshot.data).toMatchObject({ service });
        expect(JSON.stringify(snapshot.data).length).toBeGreaterThan(8 * 1_024);
        expect((snapshot.data as { instances: unknown[] }).instances).toHaveLength(40);
      }
      await callJson('POST', `${peer.url}/v1/instances`, { service: 'big', host: '10.0.0.2', port: 1 });
      await waitFor(() => stream.events.some((e) => e.event === 'delta'), 5_000, 'a delta after the big snapshot');
      expect(stream.events.some((e) => e.event === 'dropped')).toBe(false);
      await stream.close();
    });
  });
});
