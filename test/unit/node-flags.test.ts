import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { peerArgv } from '../../src/cli/local-cluster.js';
import { PEER_NODE_FLAGS } from '../../src/node-flags.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('the Node flags a peer runs with', () => {
  it('are the same in npm start, the image and the local cluster', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.start).toBe(`exec node ${PEER_NODE_FLAGS.join(' ')} dist/main.js`);
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'));
    expect(cmd).not.toBeNull();
    expect(JSON.parse(cmd![1]!)).toEqual(['node', ...PEER_NODE_FLAGS, 'dist/main.js']);
    const argv = peerArgv('cluster.json', 'peer-a', ['--log-level', 'warn']);
    expect(argv.slice(0, PEER_NODE_FLAGS.length)).toEqual(PEER_NODE_FLAGS);
    expect(argv[PEER_NODE_FLAGS.length]).toMatch(/main\.js$/);
    expect(argv.slice(PEER_NODE_FLAGS.length + 1)).toEqual(['--config', 'cluster.json', '--id', 'peer-a', '--log-level', 'warn']);
  });

  it('keep the old generation within a fifth or so of what survived its last full collection', () => {
    // 1,000,000 small objects kept (about 125 MB), then objects that live long enough to be
    // promoted and are then dropped: old-generation garbage, as a flood of registrations
    // leaves. V8's own growing factor let the old space reach 3.6 times what was kept (447 MB,
    // 2026-12-06); with the flags it stays near 1.2 times.
    const script = `
      const v8 = require('node:v8');
      const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
      const kept = [];
      for (let i = 0; i < 1_000_000; i++) kept.push({ i, s: 'k' + i, t: [i] });
      gc();
      const keptBytes = old().space_used_size;
      let largest = 0;
      let churn = [];
      for (let round = 0; round < 400; round++) {
        for (let j = 0; j < 20_000; j++) churn.push({ j, s: 'g' + j + 'r' + round });
        if (churn.length >= 200_000) churn = [];
        largest = Math.max(largest, old().space_size);
      }
      // kept.length: what was kept stays alive to the end.
      process.stdout.write(String(largest / keptBytes) + ' ' + kept.length);`;
    const run = spawnSync(process.execPath, ['--expose-gc', ...PEER_NODE_FLAGS, '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const ratio = Number(run.stdout.split(' ')[0]);
    expect(ratio).toBeGreaterThan(1);
    expect(ratio).toBeLessThan(2);
  });

  it('are accepted by this Node and keep the young generation within two 8 MB semi-spaces', () => {
    // Allocates 400 MB of short-lived objects while keeping a few MB alive across scavenges,
    // which grows the semi-spaces to their maximum; then reports the new space committed.
    const script = `
      const v8 = require('node:v8');
      const kept = [];
      let largest = 0;
      for (let i = 0; i < 4_000_000; i++) {
        const o = { i, s: 'x' + i, a: [i, i + 1] };
        if (i % 50 === 0) kept.push(o);
        if (kept.length > 20_000) kept.splice(0, 10_000);
        if (i % 100_000 === 0) largest = Math.max(largest, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
      }
      process.stdout.write(String(largest));`;
    const run = spawnSync(process.execPath, [...PEER_NODE_FLAGS, '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const newSpaceBytes = Number(run.stdout);
    expect(newSpaceBytes).toBeGreaterThan(0);
    expect(newSpaceBytes).toBeLessThanOrEqual(2 * 8 * 1024 * 1024 + 1024 * 1024);
  });
});
