/**
 * What holds a peer's event loop, seen from inside it: a preload for the peers the benchmarks
 * start (docs/benchmarks.md). It does nothing in any other process.
 *
 *   NODE_OPTIONS="--require ./bench/loop-probe.cjs" npx tsx bench/read-scale.ts --only=fullfetch
 *
 * Written to the peer's log (bench/out/<name>.log), each line `[probe <s since start>] ...`, or
 * appended to PROBE_LOG_FILE when set (each line then starts with the pid), for peers whose
 * standard error no file keeps (test/support/real-cluster.ts: bench/replication.ts, chaos):
 * - every stall of the loop longer than PROBE_STALL_MS (default 12): a 2 ms timer that fired late;
 * - every garbage collection pause longer than 5 ms, with its kind (1 scavenge, 4 mark-compact,
 *   8 incremental marking);
 * - with PROBE_PROFILE_URL set: a CPU profile (200 us sampling) written to
 *   PROBE_PROFILE_FILE (default /tmp/peer.cpuprofile), from the PROBE_PROFILE_FROM-th request
 *   whose URL starts with PROBE_PROFILE_URL (default the first) for PROBE_PROFILE_S seconds
 *   (default 5), or until the peer is stopped. Read it in Chrome's DevTools.
 *
 * PROBE_ARGV (default `dist/main.js`) is how the probed process's arguments end: set it to
 * `fastify/fastify.js` to probe the bare fastify server of bench/read-scale.ts and
 * `bench/cpu-per-request.ts --bare-fastify` instead, for a profile to set the peer's against.
 *
 * Diagnostics only: nothing in src/ depends on it, and it changes nothing a peer answers.
 */
'use strict';

if (process.argv.some((arg) => arg.endsWith(process.env.PROBE_ARGV ?? 'dist/main.js'))) {
  const { PerformanceObserver, performance } = require('node:perf_hooks');
  const startMs = Date.now();
  const file = process.env.PROBE_LOG_FILE;
  const write = file ? (text) => require('node:fs').appendFileSync(file, `${process.pid} ${text}`) : (text) => process.stderr.write(text);
  const log = (line) => write(`[probe ${((Date.now() - startMs) / 1000).toFixed(3)}] ${line}\n`);

  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.duration > 5) log(`gc kind=${entry.detail?.kind} ${entry.duration.toFixed(1)} ms`);
  }).observe({ entryTypes: ['gc'] });

  const TICK_MS = 2;
  const stallMs = Number(process.env.PROBE_STALL_MS ?? 12);
  let lastTickMs = performance.now();
  setInterval(() => {
    const nowMs = performance.now();
    if (nowMs - lastTickMs > stallMs) log(`stall ${(nowMs - lastTickMs - TICK_MS).toFixed(1)} ms`);
    lastTickMs = nowMs;
  }, TICK_MS).unref();

  const profileUrl = process.env.PROBE_PROFILE_URL;
  if (profileUrl !== undefined) {
    const fs = require('node:fs');
    const http = require('node:http');
    const inspector = require('node:inspector');
    const session = new inspector.Session();
    session.connect();
    const from = Number(process.env.PROBE_PROFILE_FROM ?? 1);
    const file = process.env.PROBE_PROFILE_FILE ?? '/tmp/peer.cpuprofile';
    let seen = 0;
    let profiling = false;
    const stop = () => {
      if (!profiling) return;
      profiling = false;
      // Same-thread inspector sessions answer synchronously: the file is written before exit.
      session.post('Profiler.stop', (error, result) => {
        if (!error) fs.writeFileSync(file, JSON.stringify(result.profile));
        log(error ? `profile failed: ${error.message}` : `profile written to ${file}`);
      });
    };
    process.prependListener('SIGTERM', stop);
    process.prependListener('SIGINT', stop);
    const emit = http.Server.prototype.emit;
    http.Server.prototype.emit = function probedEmit(event, request, ...rest) {
      if (event === 'request' && request.url.startsWith(profileUrl) && ++seen === from) {
        profiling = true;
        session.post('Profiler.enable', () =>
          session.post('Profiler.setSamplingInterval', { interval: 200 }, () => session.post('Profiler.start', () => log('profiling'))),
        );
        setTimeout(stop, Number(process.env.PROBE_PROFILE_S ?? 5) * 1000).unref();
      }
      return emit.call(this, event, request, ...rest);
    };
  }
}
