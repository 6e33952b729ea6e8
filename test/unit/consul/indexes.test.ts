import { afterEach, describe, expect, it } from 'vitest';
import { ConsulIndexes, INDEX_UNITS_PER_MS } from '../../../src/consul/indexes.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

describe('ConsulIndexes', () => {
  it('gives every change a fresh index past the last one, near the clock, never 0', () => {
    const clock = new FakeClock(0);
    const indexes = new ConsulIndexes(clock);
    expect(indexes.floor).toBe(1);
    expect(indexes.service('default', 'web')).toBe(1);
    const first = indexes.advance('default', 'web');
    expect(first).toBe(2);
    // Same millisecond: one more, whatever the clock says.
    expect(indexes.advance('default', 'api')).toBe(3);
    expect(indexes.service('default', 'WEB')).toBe(2);
    expect(indexes.catalog('default')).toBe(3);
    expect(indexes.catalog('other')).toBe(1);
    expect(indexes.highWater).toBe(3);
  });

  it('starts a new life above every index the previous one gave, so long as the clock moved on', async () => {
    const clock = new FakeClock();
    const before = new ConsulIndexes(clock);
    let last = 0;
    for (let i = 0; i < 5_000; i++) last = before.advance('default', `s${i % 7}`); // bursts run ahead of the clock
    await clock.advance(1_000);
    const after = new ConsulIndexes(clock);
    expect(after.floor).toBeGreaterThan(before.service('default', 's1'));
    expect(after.floor).toBe(clock.nowMs() * INDEX_UNITS_PER_MS);
    expect(after.advance('default', 's1')).toBeGreaterThan(last);
  });
});

describe('X-Consul-Index on the routes (brpc: a service\'s first instance)', () => {
  let t: TestConsul;
  afterEach(async () => t?.close());
  const get = (url: string) => t.app.inject({ url });
  const register = (id: string, name = 'echo') =>
    t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: name, ID: id, Address: '10.0.0.1', Port: 8080, Check: { TTL: '30s', Status: 'passing' } } });

  it('wakes a blocking query on a service that never had an instance when its first instance registers', async () => {
    t = await createTestConsul();
    const empty = await get('/v1/health/service/echo?stale&passing');
    expect(empty.json()).toEqual([]);
    const index = empty.headers['x-consul-index'] as string;
    expect(Number(index)).toBeGreaterThan(0);
    let answered: Awaited<ReturnType<typeof get>> | undefined;
    const query = get(`/v1/health/service/echo?stale&passing&index=${index}&wait=60s`).then((response) => (answered = response));
    await settle();
    expect(answered).toBeUndefined();
    expect((await register('echo-1')).statusCode).toBe(200);
    await settle();
    expect(answered).toBeDefined();
    const response = await query;
    expect(response.json().map((entry: { Service: { ID: string } }) => entry.Service.ID)).toEqual(['echo-1']);
    // What brpc checks: the index of the new content differs from the one it held.
    expect(response.headers['x-consul-index']).not.toBe(index);
  });

  it('wakes a blocking /v1/catalog/services on an empty namespace when the first service registers', async () => {
    t = await createTestConsul();
    const empty = await get('/v1/catalog/services');
    expect(empty.json()).toEqual({});
    const index = empty.headers['x-consul-index'] as string;
    let done = false;
    const query = get(`/v1/catalog/services?index=${index}&wait=60s`).then((response) => ((done = true), response));
    await settle();
    expect(done).toBe(false);
    await register('echo-1');
    await settle();
    expect(done).toBe(true);
    const response = await query;
    expect(response.json()).toEqual({ echo: [] });
    expect(response.headers['x-consul-index']).not.toBe(index);
  });

  it('changes the index when the last instance goes (a deletion), and holds only a query on the current index', async () => {
    t = await createTestConsul();
    await register('echo-1');
    const withOne = (await get('/v1/health/service/echo')).headers['x-consul-index'] as string;
    await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/echo-1' });
    const empty = await get('/v1/health/service/echo');
    expect(empty.json()).toEqual([]);
    expect(Number(empty.headers['x-consul-index'])).toBeGreaterThan(Number(withOne));
    // An index this peer never gave for this result (another peer's, a previous life's) is answered at once.
    for (const index of [Number(withOne), Number(empty.headers['x-consul-index']) + 1]) {
      let done = false;
      void get(`/v1/health/service/echo?index=${index}&wait=60s`).then(() => (done = true));
      await settle();
      expect(done).toBe(true);
    }
  });
});
