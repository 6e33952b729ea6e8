import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../support/process.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  main: string;
  exports: Record<string, string>;
};

describe('the package as users import it (built dist, through package.json exports)', () => {
  it('resolves `main`, `.` and `./client` to the built client', () => {
    const script = `
      const client = await import('${manifest.name}/client');
      const main = await import('${manifest.name}');
      const byMain = await import('./${manifest.main.replace(/^\.\//, '')}');
      console.log(JSON.stringify({
        client: Object.keys(client).sort(),
        mainIsClient: main.createRegistryClient === client.createRegistryClient && byMain.createRegistryClient === client.createRegistryClient,
      }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: projectRoot, encoding: 'utf8', timeout: 20_000 });
    expect(run.stderr).toBe('');
    const result = JSON.parse(run.stdout) as { client: string[]; mainIsClient: boolean };
    expect(result.client).toEqual(expect.arrayContaining(['createRegistryClient', 'closeOnSignals', 'RegistryClientError', 'pickInstance', 'systemClock', 'seededRng']));
    expect(result.mainIsClient).toBe(true);
    expect(manifest.exports['./client']).toBe('./dist/client/index.js');
  });
});
