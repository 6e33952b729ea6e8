import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConfigReference } from '../../src/config/reference.js';
import { errorCatalogue } from '../../src/errors.js';
import { ACCESS_POLICY } from '../../src/http/access-policy.js';
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

  it('says who may call each route, as the access policy does', () => {
    const doc = read('docs/api.md');
    const rows = new Map(
      doc
        .slice(doc.indexOf('## Authentication'))
        .split('\n')
        .filter((line) => line.startsWith('| '))
        .map((line) => [line.split('|')[1]!.trim().split(' ')[0]!, line] as const),
    );
    for (const [route, access] of ACCESS_POLICY) {
      const [method, path] = route.split(' ') as [string, string];
      if (access.startsWith('eureka')) {
        // Documented as a rule: the Eureka API's GETs read, the rest write.
        expect(access, route).toBe(method === 'GET' ? 'eureka-read' : 'eureka-write');
        continue;
      }
      expect(rows.get(access), `${route} (${access}) missing from the table of docs/api.md`).toContain(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
    }
  });

  it('has a configuration reference generated from the settings table', () => {
    expect(read('docs/configuration.md')).toBe(renderConfigReference());
  });
});
