/**
 * `node --require bench/cpu-prof-preload.cjs`: a CPU profile of a window of a process's life,
 * which `--cpu-prof` (whole life, and not allowed in NODE_OPTIONS) cannot give. The first
 * SIGUSR2 starts V8's profiler (100 us sampling), the next one writes the profile to
 * `$CPU_PROF_DIR/<pid>-<n>.cpuprofile`. bench/xds.ts --profile=DIR uses it to profile a peer
 * during the fan-out only; summarise with bench/cpu-profile-top.ts. Diagnostics only.
 */
'use strict';

const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.CPU_PROF_DIR ?? '/tmp';
const session = new inspector.Session();
session.connect();
let profiling = false;
let written = 0;
process.on('SIGUSR2', () => {
  if (!profiling) {
    profiling = true;
    session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
    return;
  }
  profiling = false;
  session.post('Profiler.stop', (error, result) => {
    if (error) return;
    written += 1;
    fs.writeFileSync(path.join(dir, `${process.pid}-${written}.cpuprofile`), JSON.stringify(result.profile));
  });
});
