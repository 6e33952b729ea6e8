import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installErrorHandlers } from '../../../src/http/errors.js';
import { uiRoutes } from '../../../src/http/ui-routes.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

describe('the dashboard routes', () => {
  it('serve the page and its assets from dist/ui, with a strict content security policy', async () => {
    server = await createTestServer();
    const page = await server.app.inject({ url: '/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.body).toContain('<script type="module" src="/ui/app.js"></script>');
    // Every asset the page names is served by the peer itself: nothing from another host.
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!).filter((url) => url.startsWith('/ui/'));
    expect(assets).toEqual(expect.arrayContaining(['/ui/app.js', '/ui/style.css', '/ui/icon.svg']));
    expect(page.body).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const url of assets) {
      const asset = await server.app.inject({ url });
      expect(asset.statusCode, url).toBe(200);
    }
    const script = await server.app.inject({ url: '/ui/app.js' });
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    // The modules the app imports are there too.
    for (const [, module] of script.body.matchAll(/from '\.\/([\w-]+\.js)'/g)) {
      expect((await server.app.inject({ url: `/ui/${module}` })).statusCode, module).toBe(200);
    }
    expect((await server.app.inject({ url: '/ui/style.css' })).headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('answers 304 to a matching ETag, and 404 for an unknown asset', async () => {
    server = await createTestServer();
    const first = await server.app.inject({ url: '/ui/app.js' });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await server.app.inject({ url: '/ui/app.js', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const missing = await server.app.inject({ url: '/ui/nope.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('REG_ERR_ROUTE_NOT_FOUND');
    expect((await server.app.inject({ url: '/ui/..%2Fpackage.json' })).statusCode).toBe(404);
  });

  it('says clearly when the dashboard was not built', async () => {
    const app = Fastify();
    installErrorHandlers(app);
    await app.register(uiRoutes, { assets: new Map() });
    const answer = await app.inject({ url: '/' });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({ code: 'REG_ERR_UI_UNAVAILABLE', message: 'the dashboard is not built next to this server (run npm run build)' });
    await app.close();
  });
});
