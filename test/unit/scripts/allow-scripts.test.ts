import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * npm 11 warns on `npm ci` about every dependency with an install script that package.json's
 * `allowScripts` does not cover (npm 12 will block them). A newcomer's first command should be
 * clean, so every such package in the lock file has its decision, by name or `name@version`.
 */
const read = (name: string) => JSON.parse(readFileSync(new URL(`../../../${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;

describe('install scripts', () => {
  it('every package of the lock file with an install script is allowed or denied in package.json', () => {
    const lock = read('package-lock.json') as { packages: Record<string, { version?: string; hasInstallScript?: boolean }> };
    const allowScripts = (read('package.json').allowScripts ?? {}) as Record<string, boolean>;
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
      .map(([path, entry]) => ({ name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), version: entry.version }));
    expect(withScripts.length).toBeGreaterThan(0);
    const uncovered = withScripts.filter(({ name, version }) => typeof allowScripts[name] !== 'boolean' && typeof allowScripts[`${name}@${version}`] !== 'boolean');
    expect(uncovered).toEqual([]);
  });
});
