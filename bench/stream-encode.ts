/**
 * What the serving peer of a join pays to encode the start-up snapshot stream, in process: a
 * peer holding `--records` instances (1,000 services, the five metadata keys of
 * bench/scale-loader.ts), its stream read to the end `--passes` times in a row (no socket: the
 * lines are only counted), each pass's wall time, CPU and µs per record. Issue 36: the serving
 * peer of a 1,000,000 join spends most of its CPU here (bench/findings.md, 2026-12-07 evening).
 * Diagnostics: prints, writes nothing.
 *   npx tsx bench/stream-encode.ts [--records=1000000] [--passes=3]
 */
import { systemClock } from '../src/clock/clock.js';
import { seededRng } from '../src/clock/rng.js';
import { resolveConfig } from '../src/config/load.js';
import { silentLogger } from '../src/log/logger.js';
import { RegistryNode } from '../src/node.js';
import type { PeerTransport } from '../src/transport/transport.js';
import { scaleBody } from './scale-loader.js';

const argument = (name: string, fallback: number): number => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const RECORDS = argument('records', 1_000_000);
const PASSES = argument('passes', 3);

const unreachable: PeerTransport = {
  call: () => Promise.reject(new Error('no peers in this benchmark')),
  peerBytes: () => ({ sent: 0, received: 0 }),
} as unknown as PeerTransport;
const config = resolveConfig({ cluster: { name: 'bench' }, peers: [{ id: 'peer-a', url: 'http://127.0.0.1:1', region: 'local', zone: 'a' }] }, {}, { id: 'peer-a' });
const node = new RegistryNode({ clock: systemClock, rng: seededRng(1), logger: silentLogger, transport: unreachable }, config);
for (let i = 0; i < RECORDS; i++) {
  const body = scaleBody(i, 1_000) as { service: string; instanceId: string; host: string; port: number; metadata: Record<string, string> };
  node.registry.register({
    namespace: 'default',
    service: body.service,
    instanceId: body.instanceId,
    leaseDurationMs: 600_000,
    data: { host: body.host, port: body.port, securePort: null, status: 'UP', weight: 1, zone: 'a', metadata: body.metadata },
  } as Parameters<RegistryNode['registry']['register']>[0]);
}
(globalThis as { gc?: () => void }).gc?.();
for (let pass = 1; pass <= PASSES; pass++) {
  const cpu = process.cpuUsage();
  const startedMs = performance.now();
  let bytes = 0;
  let lines = 0;
  for await (const line of node.peerApi.openSnapshotStream!({ from: 'peer-z' })) {
    bytes += line.length;
    lines += 1;
  }
  const wallMs = performance.now() - startedMs;
  const usage = process.cpuUsage(cpu);
  const cpuMs = (usage.user + usage.system) / 1_000;
  console.log(`pass ${pass}: ${node.store.size} records, ${lines} lines, ${(bytes / 1_048_576).toFixed(1)} MB in ${wallMs.toFixed(0)} ms (CPU ${cpuMs.toFixed(0)} ms): ${((cpuMs * 1_000) / node.store.size).toFixed(2)} µs per record`);
}
process.exit(0);
