/**
 * Where a discover's cost goes: the peer against two processes of the bare node:http server
 * and bare fastify sending the very bytes it answered (as in bench/read-scale.ts), in the same
 * interleaved rounds, with each server's CPU per request (user and system apart, from
 * /proc/<pid>/stat) and how busy its core was. `--main` adds a peer of another build (a
 * checkout's or a hand-edited copy's dist/main.js; repeatable), to see what a change moves.
 * The two bare processes against each other show the noise of one process; `--bares N` runs
 * N of them (the reference stays the mean of the first two), each further one read like the
 * peer: the noise of the ratio itself.
 *
 *   npm run build && npx tsx bench/discover-cpu.ts [--instances 100] [--rounds 16] [--bares 2] [--main DIR/main.js ...]
 *
 * Each server pinned to CPU 0 when taskset is there, the load on the others; only 127.0.0.1.
 * Prints a table; writes nothing.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { interleavedRounds, ratioOf, type RoundFigures } from './interleaved.js';
import { progress, round, table } from './lib.js';
import { pinLoadGenerator, pinningAvailable, startBare, startBareFastify, startPeer, type ServerProcess } from './processes.js';
import { registerMany } from './read-scale.js';
import { median } from './single-peer.js';

const SERVICE = 'discover-cpu';
const ORDINALS = ['1st', '2nd', '3rd'];

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

async function main(): Promise<void> {
  const instances = option('--instances', 100);
  const rounds = option('--rounds', 16);
  const bares = option('--bares', 2);
  if (!Number.isInteger(bares) || bares < 2) throw new Error('--bares: at least 2 (the reference is the mean of two)');
  const mains = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--main' ? [arg] : []));
  const pinned = pinningAvailable();
  const path = `/v1/services/${SERVICE}`;
  const servers: [string, ServerProcess][] = [];
  try {
    const startLoadedPeer = async (name: string, main?: string) => {
      const peer = await startPeer(name, { pinned, logLevel: 'warn', ...(main ? { main } : {}) });
      servers.push([main ?? 'peer', peer]);
      await registerMany(peer.url, [SERVICE], instances, 'd');
      return Buffer.from(await (await request(`${peer.url}${path}`)).body.arrayBuffer());
    };
    const body = await startLoadedPeer('discover-cpu-peer');
    const file = join(tmpdir(), `discover-cpu-${process.pid}.json`);
    writeFileSync(file, body);
    for (const [i, main] of mains.entries()) {
      const other = await startLoadedPeer(`discover-cpu-other-${i}`, main);
      if (other.length !== body.length) progress(`${main} answers ${other.length} bytes, the peer ${body.length}: not the same listing`);
    }
    // The reference is the mean of the first two; a third and more are measured against it as
    // the peer is: identical servers, so their ratios are what noise alone makes of one.
    for (let i = 0; i < bares; i++) servers.push([i === 0 ? 'bare node:http' : `bare node:http (${ORDINALS[i] ?? `${i + 1}th`})`, await startBare(file, pinned)]);
    servers.push(['bare fastify', await startBareFastify(file, pinned)]);
    progress(`${servers.length} servers, a ${instances}-instance listing of ${body.length} bytes, ${rounds} rounds of 1 s each`);
    pinLoadGenerator(pinned);
    const figures = await interleavedRounds(servers.map(([, server]) => server), path, rounds, 1_000);
    pinLoadGenerator(false);
    const bareAt = servers.findIndex(([name]) => name === 'bare node:http');
    const reference = figures[bareAt]!.map((bare, r) => (bare.perSecond + figures[bareAt + 1]![r]!.perSecond) / 2);
    const of = (rows: RoundFigures[], pick: (figures: RoundFigures) => number) => median(rows.map(pick));
    const rows = servers.map(([name], i) => {
      const mine = figures[i]!;
      const ratio = ratioOf(mine.map((figures, r) => figures.perSecond / reference[r]!));
      return {
        server: name,
        'per second': Math.round(of(mine, (f) => f.perSecond)),
        'to the bare mean': `${ratio.ratio}x (rounds ${ratio.range[0]}-${ratio.range[1]})`,
        'user µs': round(of(mine, (f) => f.userUs), 1),
        'system µs': round(of(mine, (f) => f.systemUs), 1),
        busy: round(of(mine, (f) => f.busy), 2),
      };
    });
    const noise = ratioOf(figures[bareAt + 1]!.map((second, r) => second.perSecond / figures[bareAt]![r]!.perSecond));
    console.log(`\n${table(rows)}\n\nthe 2nd bare process to the 1st: ${noise.ratio}x (rounds ${noise.range[0]}-${noise.range[1]}); medians over the rounds`);
  } finally {
    pinLoadGenerator(false);
    for (const [, server] of servers) await server.stop();
  }
}

await main();
