import { describe, expect, it } from 'vitest';
import { buildConsulApp } from '../../src/consul/app.js';
import { startCluster, useClusterCleanup } from './helpers.js';

useClusterCleanup();

describe('the Consul API on a cluster', () => {
  it('a register and its check states on one peer are in every peer\'s Consul health answers', async () => {
    const c = await startCluster({ size: 3 });
    const apps = await Promise.all(c.ids.map((id) => buildConsulApp({ node: c.node(id), port: 8500 })));
    try {
      const [a, b, cApp] = apps.map((entry) => entry.app);
      const register = await a!.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'web', ID: 'web-1', Address: '10.0.0.1', Port: 80, Tags: ['v1'], Check: { TTL: '10s' } } });
      expect(register.statusCode).toBe(200);
      await a!.inject({ method: 'PUT', url: '/v1/agent/check/pass/service:web-1' });
      await c.advance(50);
      for (const app of [b!, cApp!]) {
        const [entry] = (await app.inject({ url: '/v1/health/service/web?passing' })).json();
        expect(entry.Service).toMatchObject({ ID: 'web-1', Tags: ['v1'], Port: 80 });
      }
      // The check goes critical through another peer: every peer stops listing it as passing.
      expect((await b!.inject({ method: 'PUT', url: '/v1/agent/check/fail/service:web-1' })).statusCode).toBe(200);
      await c.advance(50);
      for (const app of [a!, cApp!]) expect((await app.inject({ url: '/v1/health/service/web?passing' })).json()).toEqual([]);
    } finally {
      await Promise.all(apps.map((entry) => entry.app.close()));
    }
  });
});

describe('X-Consul-Index across peers', () => {
  it('wakes a blocking query on an empty service on one peer when the first instance registers on another', async () => {
    const c = await startCluster({ size: 2 });
    const apps = await Promise.all(c.ids.map((id) => buildConsulApp({ node: c.node(id), port: 8500 })));
    try {
      const [a, b] = apps.map((entry) => entry.app);
      const empty = await b!.inject({ url: '/v1/health/service/echo?stale&passing' });
      const index = empty.headers['x-consul-index'] as string;
      const catalogIndex = (await b!.inject({ url: '/v1/catalog/services' })).headers['x-consul-index'] as string;
      let service: { json(): unknown; headers: Record<string, unknown> } | undefined;
      let catalog: { json(): unknown; headers: Record<string, unknown> } | undefined;
      void b!.inject({ url: `/v1/health/service/echo?stale&passing&index=${index}&wait=60s` }).then((response) => (service = response));
      void b!.inject({ url: `/v1/catalog/services?index=${catalogIndex}&wait=60s` }).then((response) => (catalog = response));
      await c.advance(10);
      expect(service).toBeUndefined();
      const register = await a!.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'echo', ID: 'echo-1', Address: '10.0.0.1', Port: 80, Check: { TTL: '30s', Status: 'passing' } } });
      expect(register.statusCode).toBe(200);
      await c.advance(50);
      expect((service!.json() as { Service: { ID: string } }[]).map((entry) => entry.Service.ID)).toEqual(['echo-1']);
      expect(service!.headers['x-consul-index']).not.toBe(index);
      expect(catalog!.json()).toEqual({ echo: [] });
      expect(catalog!.headers['x-consul-index']).not.toBe(catalogIndex);
    } finally {
      await Promise.all(apps.map((entry) => entry.app.close()));
    }
  });

  it('a peer restarted without its data dir never answers a lower index than before for a changed result', async () => {
    const c = await startCluster({ size: 2 });
    const [idA, idB] = c.ids as [string, string];
    const a = await buildConsulApp({ node: c.node(idA), port: 8500 });
    let b = await buildConsulApp({ node: c.node(idB), port: 8500 });
    try {
      const put = (app: typeof a, id: string, port = 80) =>
        app.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'echo', ID: id, Address: '10.0.0.1', Port: port, Check: { TTL: '10m', Status: 'passing' } } });
      // Many changes on b to a few instances: more changes than the records a restart brings back.
      for (let i = 0; i < 50; i++) expect((await put(b, `echo-${i % 10}`, 80 + i)).statusCode).toBe(200);
      await c.advance(50);
      const before = Number((await b.app.inject({ url: '/v1/health/service/echo' })).headers['x-consul-index']);
      const beforeCatalog = Number((await b.app.inject({ url: '/v1/catalog/services' })).headers['x-consul-index']);
      await b.app.close();
      c.crash(idB);
      await c.advance(100);
      const node = await c.restart(idB);
      b = await buildConsulApp({ node, port: 8500 });
      // The restarted peer got the records back from a; then one more changes the result.
      expect((await put(a, 'echo-new')).statusCode).toBe(200);
      await c.advance(50);
      const after = await b.app.inject({ url: '/v1/health/service/echo' });
      expect((after.json() as unknown[]).length).toBe(11);
      expect(Number(after.headers['x-consul-index'])).toBeGreaterThan(before);
      expect(Number((await b.app.inject({ url: '/v1/catalog/services' })).headers['x-consul-index'])).toBeGreaterThan(beforeCatalog);
    } finally {
      await a.app.close();
      await b.app.close();
    }
  });
});
