/**
 * Dashboard responsiveness with 10,000 instances (issue 9's "stays responsive"), in Debian's
 * chromium driven by playwright-core, against one real peer on 127.0.0.1. The reference is the
 * same page with 100 instances, measured in the same run: the ratios show what the size costs.
 *
 * Layout of a run of N instances: one service `big` with N/2 instances, and N/2 more spread over
 * 100 services. Measured, in the page (performance.now, until the DOM shows the result):
 *   - first render: navigation until every instance is counted in the services list;
 *   - search: typing a service name until the list is filtered;
 *   - select big: clicking the big service until its instance rows are drawn;
 *   - scroll: jumping to the middle of the big service until those rows are drawn;
 *   - live add: a register over HTTP until its row appears (includes the 50 ms coalescing);
 *   - churn: 500 status changes over HTTP; the longest main-thread task while they stream in.
 * Run: npm run build && npx tsx bench/dashboard.ts [--quick]
 */
import { launchBrowser } from '../test/support/browser.js';
import { startPeerProcess, type PeerProcess } from '../test/support/process.js';
import { pool, progress, quick, round, runBounded, send, table, writeResult } from './lib.js';

// The callbacks given to page.evaluate run in the browser; these are its names (this file is
// type-checked for Node, without the DOM library).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const PerformanceObserver: any;
declare const requestAnimationFrame: (callback: (timeMs: number) => void) => number;

/** Frames an in-page wait may take before the run fails (about 20 s at 60 frames a second). */
const MAX_FRAMES = 1_200;

const LARGE = quick ? 2_000 : 10_000;
const SMALL = 100;
const REPEATS = quick ? 3 : 5;

async function load(peer: PeerProcess, count: number): Promise<void> {
  const target = pool(peer.url, 32);
  const half = Math.floor(count / 2);
  const result = await runBounded(count, 32, 120_000, async (i) => {
    const big = i < half;
    const answer = await send(target, {
      method: 'POST',
      path: '/v1/instances',
      body: {
        service: big ? 'big' : `svc-${String(i % 100).padStart(2, '0')}`,
        host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        port: 8080,
        instanceId: `i-${String(i).padStart(6, '0')}`,
        zone: `z${i % 3}`,
        metadata: { version: `1.${i % 7}.0`, team: `t${i % 11}` },
        leaseDurationMs: 600_000,
      },
    });
    if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
  });
  await target.close();
  if (result.done !== count) throw new Error(`registered ${result.done} of ${count} (${result.errors} errors)`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(count: number): Promise<Record<string, number>> {
  const peer = await startPeerProcess(['--port', '0']);
  const browser = await launchBrowser();
  try {
    progress(`loading ${count} instances`);
    await load(peer, count);
    const page = await browser.page({ width: 1600, height: 1000 });
    const writer = pool(peer.url, 1);
    const figures: Record<string, number[]> = { firstRenderMs: [], searchMs: [], selectBigMs: [], scrollMs: [], liveAddMs: [] };
    for (let round = 0; round < REPEATS; round++) {
      const t0 = Date.now();
      // Opened on a small service; selecting `big` is then measured.
      await page.goto(`${peer.url}/?service=svc-77`);
      // Every instance counted (each earlier round added one live).
      await page.waitForFunction((n: number) => document.querySelector('#services-summary')?.textContent?.includes(`${n.toLocaleString()} instances`), count + round, { timeout: 60_000 });
      figures.firstRenderMs!.push(Date.now() - t0);
      // Each interaction is timed inside the page, from the event to the frame that shows it.
      figures.searchMs!.push(
        await page.evaluate(async (maxFrames: number) => {
          const input = document.querySelector('#search');
          const t = performance.now();
          input.value = 'svc-77';
          input.dispatchEvent(new Event('input'));
          for (let frame = 0; document.querySelectorAll('#services [data-service]').length !== 1; frame++) {
            if (frame > maxFrames) throw new Error('the search never narrowed the list to one service');
            await new Promise(requestAnimationFrame);
          }
          const elapsed = performance.now() - t;
          input.value = '';
          input.dispatchEvent(new Event('input'));
          await new Promise(requestAnimationFrame);
          return elapsed;
        }, MAX_FRAMES),
      );
      figures.selectBigMs!.push(
        await page.evaluate(async (maxFrames: number) => {
          for (let frame = 0; !document.querySelector('#services [data-service="big"]'); frame++) {
            if (frame > maxFrames) throw new Error('the big service is not listed');
            await new Promise(requestAnimationFrame);
          }
          const t = performance.now();
          document.querySelector('#services [data-service="big"]').click();
          // (No named functions in here: tsx would wrap them in a helper the page does not have.)
          for (let frame = 0; !/^(a-live-|i-000000$)/.test(document.querySelector('#instances [data-instance]')?.dataset.instance ?? ''); frame++) {
            if (frame > maxFrames) throw new Error('the big service never showed its instances');
            await new Promise(requestAnimationFrame);
          }
          return performance.now() - t;
        }, MAX_FRAMES),
      );
      figures.scrollMs!.push(
        await page.evaluate(
          async ([n, maxFrames]: [number, number]) => {
            const list = document.querySelector('#instances');
            const target = `i-${String(Math.floor(n / 4)).padStart(6, '0')}`;
            const t = performance.now();
            list.scrollTop = list.scrollHeight / 2;
            for (let frame = 0; !document.querySelector(`#instances [data-instance="${target}"]`); frame++) {
              if (frame > maxFrames) throw new Error(`scrolling never showed ${target}`);
              await new Promise(requestAnimationFrame);
            }
            return performance.now() - t;
          },
          [count, MAX_FRAMES] as [number, number],
        ),
      );
      // Sorted first among big's instances, so its row is drawn at the top of the list.
      const id = `a-live-${round}`;
      await page.evaluate(() => (document.querySelector('#instances').scrollTop = 0));
      const waiting = page.waitForSelector(`#instances [data-instance="${id}"]`, { timeout: 30_000 });
      const t1 = Date.now();
      await send(writer, { method: 'POST', path: '/v1/instances', body: { service: 'big', host: '10.99.0.1', port: 9000 + round, instanceId: id, leaseDurationMs: 600_000 } });
      await waiting;
      figures.liveAddMs!.push(Date.now() - t1);
    }
    await writer.close();
    // Churn: 500 status changes while the big service is shown; the longest task the page ran.
    await page.evaluate(() => {
      (globalThis as unknown as { longest: number }).longest = 0;
      new PerformanceObserver((list: any) => {
        for (const entry of list.getEntries()) {
          const holder = globalThis as unknown as { longest: number };
          holder.longest = Math.max(holder.longest, entry.duration);
        }
      }).observe({ type: 'longtask', buffered: false });
    });
    const target = pool(peer.url, 16);
    await runBounded(500, 16, 60_000, async (i) => {
      const instanceId = `i-${String(i % Math.floor(count / 2)).padStart(6, '0')}`;
      await send(target, { method: 'PUT', path: `/v1/services/big/instances/${instanceId}/status`, body: { status: i % 2 ? 'DOWN' : 'UP' } });
    });
    await target.close();
    await page.waitForTimeout(500);
    const longestTaskMs = await page.evaluate(() => (globalThis as unknown as { longest: number }).longest);
    if (browser.errors.length > 0) throw new Error(`page errors: ${browser.errors.join('; ')}`);
    return { ...Object.fromEntries(Object.entries(figures).map(([name, values]) => [name, round(median(values))])), churnLongestTaskMs: round(longestTaskMs) };
  } finally {
    await browser.close();
    peer.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  progress(`dashboard benchmark: ${SMALL} vs ${LARGE} instances, median of ${REPEATS}`);
  const small = await measure(SMALL);
  const large = await measure(LARGE);
  const rows = Object.keys(large).map((name) => ({
    measure: name,
    [`${SMALL} instances (ms)`]: small[name]!,
    [`${LARGE} instances (ms)`]: large[name]!,
    ratio: small[name]! > 0 ? round(large[name]! / small[name]!, 2) : '-',
  }));
  process.stdout.write(`${table(rows)}\n`);
  const file = writeResult(quick ? 'dashboard-quick' : 'dashboard', { small: { instances: SMALL, ...small }, large: { instances: LARGE, ...large } });
  progress(`wrote ${file}`);
}

await main();
