/**
 * The cost of one `GET /v1/dashboard/registrations` body for a namespace of 5,000 services
 * (src/metrics/registrations-view.ts): the list kept once per change and shared, against the
 * body put together per request (REFERENCE below: what the route did before, every service's
 * kept counts mapped and serialized in one piece), measured in the same run on one in-process
 * peer. Both read the same per-service counts (kept with each stable view), so the difference
 * is what each request re-does; both include encoding the body to bytes, as a reply does.
 * Also the first build after a change, in slices.
 * `npx tsx bench/dashboard-registrations.ts`; a few seconds.
 */
import { applicationOf } from '../src/app/application.js';
import { registrationsOf, RegistrationsViews } from '../src/metrics/registrations-view.js';
import { parseRegistration } from '../src/registry/validate.js';
import type { ServiceViews } from '../src/views/service-views.js';
import { createTestNode } from '../test/support/node.js';

const SERVICES = 5_000;
const REQUESTS = 200;

const { node } = await createTestNode();
for (let i = 0; i < SERVICES; i++) {
  node.registry.register(parseRegistration({ service: `svc-${i}`, host: '10.0.0.1', port: 1000 + (i % 50_000), leaseDurationMs: 600_000 }, 'default', node.config.limits, node.config.cluster));
}
const reads = applicationOf(node).reads;

/** The body as the route built it before: per request, in one piece. */
function REFERENCE(views: ServiceViews, namespace: string): string {
  const services = views.servicesOf(namespace).map((name) => {
    const view = views.stable(namespace, name);
    const counted = registrationsOf(views, view);
    return { service: view.service, protocols: counted.protocols };
  });
  return JSON.stringify({ namespace, services });
}

const views = new RegistrationsViews(reads);
const firstStartedMs = performance.now();
const first = Buffer.concat((await views.body('default', null)).chunks).toString('utf8');
const firstBuildMs = performance.now() - firstStartedMs;
if (JSON.stringify(JSON.parse(first)) !== REFERENCE(reads.views, 'default')) throw new Error('the kept body differs from the reference');

let bytes = 0;
/** Per request: the body as the bytes a reply sends (the reference's string encoded; the kept chunks as they are). */
async function perRequestMs(body: () => Buffer[] | Promise<Buffer[]>): Promise<number> {
  for (let i = 0; i < 20; i++) bytes = (await body()).reduce((sum, chunk) => sum + chunk.length, 0);
  const startedMs = performance.now();
  for (let i = 0; i < REQUESTS; i++) bytes = (await body()).reduce((sum, chunk) => sum + chunk.length, 0);
  return (performance.now() - startedMs) / REQUESTS;
}

const referenceMs = await perRequestMs(() => [Buffer.from(REFERENCE(reads.views, 'default'))]);
const keptMs = await perRequestMs(async () => [...(await views.body('default', null)).chunks]);
console.log(`${SERVICES.toLocaleString('en')} services (${bytes.toLocaleString('en')} B body), ${REQUESTS} requests after 20 of warm-up (in process, no HTTP):`);
console.log(`  per request, built in one piece (before): ${referenceMs.toFixed(3)} ms`);
console.log(`  per request, the kept list (now):         ${keptMs.toFixed(3)} ms  (${(referenceMs / keptMs).toFixed(0)}x less; the chunks are sent as they are, paced past 64 KB)`);
console.log(`  first build after a change, in slices:    ${firstBuildMs.toFixed(1)} ms (per-service counts built too)`);
await node.stop();
