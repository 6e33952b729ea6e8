// Eureka full fetch and delta over a large registry: is the cost linear in the number of
// instances, and how does it compare with a reference measured in the same run (serialising
// the same records with a bare JSON.stringify, the least any answer can cost)?
//
//   npm run bench:eureka            (builds first; runs in-process with app.inject, no sockets)
//
// Bounded: a fixed number of rounds per size, no network, no timers left behind.
import { performance } from 'node:perf_hooks';
import { seededRng } from '../dist/clock/rng.js';
import { resolveConfig } from '../dist/config/load.js';
import { buildServer } from '../dist/http/server.js';
import { silentLogger } from '../dist/log/logger.js';
import { RegistryNode } from '../dist/node.js';

const SIZES = [1_000, 10_000];
const ROUNDS = 5;
const APPS = 100;

/** A clock that stands still: the registry's leases stay live whatever the bench takes. */
function fixedClock(nowMs) {
  return { nowMs: () => nowMs, setTimeout: () => ({ cancel() {} }), setInterval: () => ({ cancel() {} }) };
}

function eurekaBody(i) {
  return {
    instance: {
      instanceId: `host-${i}:app-${i % APPS}:8080`,
      app: `APP-${i % APPS}`,
      hostName: `host-${i}.bench.test`,
      ipAddr: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      status: i % 10 === 0 ? 'DOWN' : 'UP',
      port: { $: 8080, '@enabled': 'true' },
      securePort: { $: 443, '@enabled': 'false' },
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
      leaseInfo: { renewalIntervalInSecs: 30, durationInSecs: 90 },
      metadata: { 'management.port': '8080', version: '1.4.2' },
      homePageUrl: `http://host-${i}.bench.test:8080/`,
      healthCheckUrl: `http://host-${i}.bench.test:8080/actuator/health`,
      vipAddress: `app-${i % APPS}`,
      secureVipAddress: `app-${i % APPS}`,
      lastDirtyTimestamp: '1767225600000',
    },
  };
}

async function median(fn) {
  const times = [];
  for (let round = 0; round < ROUNDS; round++) {
    const startMs = performance.now();
    await fn();
    times.push(performance.now() - startMs);
  }
  return times.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
}

// The rate limit is off: the bench is one client registering thousands of instances at once.
async function measure(size) {
  const node = new RegistryNode({ clock: fixedClock(Date.UTC(2026, 0, 1)), rng: seededRng(1), logger: silentLogger }, resolveConfig({ limits: { rateLimitPerSecond: 0 } }, {}, {}));
  const app = await buildServer({ node });
  await app.ready();
  for (let i = 0; i < size; i++) {
    const response = await app.inject({ method: 'POST', url: `/eureka/apps/APP-${i % APPS}`, payload: eurekaBody(i) });
    if (response.statusCode !== 204) throw new Error(`register ${i}: ${response.statusCode} ${response.body}`);
  }
  const fetch = (accept) => app.inject({ url: '/eureka/apps', headers: { accept } });
  const check = await fetch('application/json');
  const count = JSON.parse(check.body).applications.application.reduce((n, a) => n + a.instance.length, 0);
  if (count !== size) throw new Error(`listed ${count} of ${size}`);
  const records = [...node.store.entries()].map((entry) => entry.record);
  const result = {
    size,
    jsonMs: await median(() => fetch('application/json')),
    xmlMs: await median(() => fetch('application/xml')),
    deltaMs: await median(() => app.inject({ url: '/eureka/apps/delta', headers: { accept: 'application/json' } })),
    referenceMs: await median(async () => JSON.stringify(records)),
    jsonBytes: check.body.length,
  };
  await app.close();
  return result;
}

const results = [];
for (const size of SIZES) results.push(await measure(size));
for (const r of results) {
  console.log(
    `${String(r.size).padStart(6)} instances: full JSON ${r.jsonMs.toFixed(1)} ms (${(r.jsonBytes / 1e6).toFixed(1)} MB), ` +
      `XML ${r.xmlMs.toFixed(1)} ms, delta ${r.deltaMs.toFixed(1)} ms, reference JSON.stringify ${r.referenceMs.toFixed(1)} ms ` +
      `-> full JSON / reference = ${(r.jsonMs / r.referenceMs).toFixed(1)}x`,
  );
}
const [small, large] = results;
const growth = large.size / small.size;
console.log(
  `growth x${growth} instances -> full JSON x${(large.jsonMs / small.jsonMs).toFixed(1)}, XML x${(large.xmlMs / small.xmlMs).toFixed(1)}, ` +
    `delta x${(large.deltaMs / small.deltaMs).toFixed(1)}, reference x${(large.referenceMs / small.referenceMs).toFixed(1)} ` +
    `(linear: about x${growth}; quadratic: about x${growth * growth})`,
);
