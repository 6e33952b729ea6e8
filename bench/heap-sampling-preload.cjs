/**
 * `node --require bench/heap-sampling-preload.cjs`: V8's sampling heap profiler over a process's
 * whole life (one sample per 16 KiB allocated), written on SIGUSR2 to
 * `$HEAP_SAMPLING_DIR/<pid>-<live|all>.heapprofile` (default /tmp). Summarise with
 * bench/heap-sampling-top.ts.
 *
 * By default only samples of objects still alive count: where the live heap was allocated.
 * `HEAP_SAMPLING_ALL=1` keeps the samples of freed objects too, which makes it an allocation
 * profile: on Node 20 (V8 11.3) the profiler's own handles carry a sampled young object through
 * scavenges, so almost every sample ends up freed by a full collection, whatever its real
 * lifetime (measured: 427 MB sampled for 8 MB of real old-space growth). Read it as "what
 * allocates most", never as "what becomes old-generation garbage"; for that, measure the old
 * space itself (`v8.getHeapSpaceStatistics()`), as bench/rss-vs-heap.sh does for a whole peer.
 * Diagnostics only.
 */
'use strict';

const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.HEAP_SAMPLING_DIR ?? '/tmp';
const all = process.env.HEAP_SAMPLING_ALL === '1';
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable', () =>
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: all,
    includeObjectsCollectedByMinorGC: all,
  }),
);
process.on('SIGUSR2', () => {
  session.post('HeapProfiler.getSamplingProfile', (error, result) => {
    if (error) return;
    fs.writeFileSync(path.join(dir, `${process.pid}-${all ? 'all' : 'live'}.heapprofile`), JSON.stringify(result.profile));
  });
});
