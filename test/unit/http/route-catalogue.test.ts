import { describe, expect, it } from 'vitest';
import { EUREKA_PREFIXES } from '../../../src/eureka/route-definitions.js';
import { ACCESS_POLICY } from '../../../src/http/access-policy.js';
import { definitionOf, HTTP_ROUTES } from '../../../src/http/route-catalogue.js';
import { isGatedUntilReady } from '../../../src/http/readiness-gate.js';
import { routeKey } from '../../../src/http/route-definition.js';

/** The readiness rule as it was written by URL prefix before routes declared it. */
function gatedByPrefix(url: string): boolean {
  if (url.startsWith('/eureka')) return true;
  if (!url.startsWith('/v1/')) return false;
  // The operator's views (the cluster, the dashboard's Protocols panel) answer while the peer syncs.
  return !url.startsWith('/v1/peer/') && url !== '/v1/cluster' && url !== '/v1/dashboard/protocols' && !url.startsWith('/v1/admin/');
}

describe('the route catalogue', () => {
  it('declares each route once', () => {
    const keys = HTTP_ROUTES.map((definition) => routeKey(definition.method, definition.url));
    expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
    expect(ACCESS_POLICY.size).toBe(keys.length);
  });

  it('gates the same routes until ready as the former prefix rule: the client and Eureka APIs', () => {
    for (const definition of HTTP_ROUTES) {
      expect(isGatedUntilReady(definition.method, definition.url), routeKey(definition.method, definition.url)).toBe(gatedByPrefix(definition.url));
    }
    expect(isGatedUntilReady('HEAD', '/v1/services/:service')).toBe(true);
    expect(isGatedUntilReady('GET', '/v1/not-a-route')).toBe(false);
  });

  it('lists the Eureka routes under each prefix, tagged by it, and documents every route it serves', () => {
    for (const prefix of EUREKA_PREFIXES) {
      expect(definitionOf('POST', `${prefix}/apps/:app`)).toMatchObject({ access: 'eureka-write', doc: { tags: [`Eureka ${prefix}`] } });
      expect(definitionOf('GET', `${prefix}/apps/:app`)).toMatchObject({ access: 'eureka-read' });
    }
    const undocumented = HTTP_ROUTES.filter((definition) => !definition.doc).map((definition) => definition.url);
    expect(undocumented.every((url) => url.startsWith('/docs'))).toBe(true);
  });
});
