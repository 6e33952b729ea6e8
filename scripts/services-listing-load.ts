/**
 * How `GET /v1/services` (every service of a namespace) weighs on a peer's event loop: one peer
 * from dist/ (run `npm run build` first) with `--services` services of one instance each, then
 * `/healthz` timed every 50 ms, first alone and then beside `--readers` loops that each fetch
 * the listing back to back. Bounded: registers at most 20,000 services, loads for `--seconds`
 * (at most 60). Everything on 127.0.0.1; the peer is stopped (by its pid) at the end.
 *
 *   npx tsx scripts/services-listing-load.ts [--services 5015] [--readers 4] [--seconds 10] [--changes 0]
 *
 * `--main FILE` runs another build's entry point (a worktree of the commit before, built), to
 * set the figures before a change beside those after it.
 * `--changes N` adds N registers per second during the load (each a change every listing must
 * show: a shared listing is rebuilt after each).
 *
 * Issue 33.15: with 5,015 services and 4 readers, /healthz p50 was 108 ms.
 */
import { percentile, pool, round, send, sleep } from '../bench/lib.js';
import { startPeer } from '../bench/processes.js';

function flag(name: string, fallback: number, max: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at < 0 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1 || value > max) throw new Error(`--${name}: an integer from 1 to ${max}`);
  return value;
}

const services = flag('services', 5_015, 20_000);
const readers = flag('readers', 4, 64);
const seconds = flag('seconds', 10, 60);
const changesPerSecond = process.argv.includes('--changes') ? flag('changes', 0, 1_000) : 0;

/** /healthz, one at a time every 50 ms, until `stop()` says so: its latencies in ms. */
async function probeHealth(url: string, until: () => boolean): Promise<number[]> {
  const probe = pool(url, 1);
  const latenciesMs: number[] = [];
  try {
    while (!until()) {
      const t0 = performance.now();
      const { status } = await send(probe, { method: 'GET', path: '/healthz' });
      if (status !== 200) throw new Error(`/healthz answered ${status}`);
      latenciesMs.push(performance.now() - t0);
      await sleep(50);
    }
  } finally {
    await probe.close();
  }
  return latenciesMs;
}

function summary(latenciesMs: number[]): string {
  return `p50 ${round(percentile(latenciesMs, 0.5))} ms, p99 ${round(percentile(latenciesMs, 0.99))} ms, max ${round(Math.max(...latenciesMs))} ms (${latenciesMs.length} probes)`;
}

const mainAt = process.argv.indexOf('--main');
const main = mainAt < 0 ? undefined : process.argv[mainAt + 1];
const peer = await startPeer('services-listing', { pinned: false, logLevel: 'warn', ...(main ? { main } : {}) });
try {
  const writer = pool(peer.url, 16);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < services) {
        const index = next++;
        const { status } = await send(writer, {
          method: 'POST',
          path: '/v1/instances',
          body: { service: `svc-${index}`, host: '10.0.0.1', port: 1_000 + (index % 60_000), leaseDurationMs: 600_000 },
        });
        if (status !== 201) throw new Error(`register answered ${status}`);
      }
    }),
  );
  await writer.close();
  const listing = pool(peer.url, readers);
  const first = await send(listing, { method: 'GET', path: '/v1/services' });
  const listed = (JSON.parse(first.body) as { services: unknown[] }).services.length;
  console.log(`${listed} services listed, ${first.body.length} bytes per listing`);

  const quietUntilMs = performance.now() + 3_000;
  console.log(`/healthz alone:             ${summary(await probeHealth(peer.url, () => performance.now() > quietUntilMs))}`);

  const loadUntilMs = performance.now() + seconds * 1_000;
  const listingMs: number[] = [];
  const loops = Array.from({ length: readers }, async () => {
    while (performance.now() < loadUntilMs) {
      const t0 = performance.now();
      const { status } = await send(listing, { method: 'GET', path: '/v1/services' });
      if (status !== 200) throw new Error(`/v1/services answered ${status}`);
      listingMs.push(performance.now() - t0);
    }
  });
  const changer = pool(peer.url, 1);
  const changes = (async () => {
    for (let index = 0; changesPerSecond > 0 && performance.now() < loadUntilMs; index++) {
      const body = { service: `changing-${index % 100}`, host: '10.0.0.2', port: 1_000 + index, leaseDurationMs: 600_000 };
      const { status } = await send(changer, { method: 'POST', path: '/v1/instances', body });
      if (status !== 201) throw new Error(`register answered ${status}`);
      await sleep(1_000 / changesPerSecond);
    }
  })();
  const health = probeHealth(peer.url, () => performance.now() > loadUntilMs);
  await Promise.all([...loops, changes]);
  await changer.close();
  console.log(`/healthz beside ${readers} readers${changesPerSecond > 0 ? ` and ${changesPerSecond} changes/s` : ''}: ${summary(await health)}`);
  console.log(`GET /v1/services: ${listingMs.length} in ${seconds} s, p50 ${round(percentile(listingMs, 0.5))} ms, p99 ${round(percentile(listingMs, 0.99))} ms`);
  await listing.close();
} finally {
  await peer.stop();
}
