import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientErrorCatalogue } from '../../../src/client/errors.js';
import { numericOptions } from '../../../src/client/options.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

describe('client docs', () => {
  it('lists every client error code in docs/client.md', () => {
    const doc = read('docs/client.md');
    for (const code of Object.keys(clientErrorCatalogue)) expect(doc, `${code} missing from docs/client.md`).toContain(`| \`${code}\` |`);
  });

  it('documents every option with its default', () => {
    const doc = read('docs/client.md');
    for (const [name, bounds] of Object.entries(numericOptions)) {
      expect(doc, `${name} missing from docs/client.md`).toContain(`| \`${name}\` | ${bounds.default} |`);
    }
    for (const name of ['peers', 'namespace', 'clock', 'rng', 'logger', 'http']) expect(doc).toContain(`| \`${name}\` |`);
  });

  it('shows the example in the README exactly as the file the end-to-end test runs', () => {
    expect(read('README.md')).toContain('```ts\n' + read('examples/provider-consumer.ts') + '```');
  });
});
