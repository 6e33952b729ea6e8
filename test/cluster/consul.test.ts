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
