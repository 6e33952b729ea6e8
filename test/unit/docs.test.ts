import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConfigReference } from '../../src/config/reference.js';
import { errorCatalogue } from '../../src/errors.js';
import { buildServer } from '../../src/http/server.js';
import { createTestNode } from '../support/node.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('docs', () => {
  it('lists every error code with its status', () => {
    const doc = read('docs/errors.md');
    for (const [code, { status }] of Object.entries(errorCatalogue)) {
      expect(doc, `${code} missing from docs/errors.md`).toContain(`| \`${code}\` | ${status} |`);
    }
  });

  it('documents every route', async () => {
    const { node } = await createTestNode({ start: false });
    const routes: string[] = [];
    const app = await buildServer({ node, onRoute: (method, url) => routes.push(`${method} ${url}`) });
    await app.ready();
    expect(routes.length).toBeGreaterThan(5);
    const doc = read('docs/api.md');
    for (const route of routes) {
      const [method, path] = route.split(' ');
      const documented = path!.replace(/:(\w+)/g, '{$1}');
      expect(doc, `${route} missing from docs/api.md`).toContain(`${method} ${documented}`);
    }
    await app.close();
  });

  it('has a configuration reference generated from the settings table', () => {
    expect(read('docs/configuration.md')).toBe(renderConfigReference());
  });
});
