import { afterEach, describe, expect, it, vi } from 'vitest';
import { applicationOf } from '../../../src/app/application.js';
import { readsBudget } from '../../../src/http/loop-budget.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { KEPT_REGISTRATIONS_MAX, RegistrationsViews } from '../../../src/metrics/registrations-view.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.app.close();
});

async function register(service: string, port: number, extra: Record<string, unknown> = {}): Promise<void> {
  const response = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service, host: '10.0.0.5', port, ...extra } });
  expect(response.statusCode).toBe(201);
}

/** The body's bytes, as the reply sends them. */
const bodyOf = async (views: RegistrationsViews, namespace: string, service: string | null): Promise<string> => {
  const body = await views.body(namespace, service);
  const joined = Buffer.concat(body.chunks);
  expect(joined.length).toBe(body.bytes);
  return joined.toString('utf8');
};
const servicesOf = async (views: RegistrationsViews, namespace = 'default') => JSON.parse(await bodyOf(views, namespace, null)).services as unknown[];

describe('the dashboard registrations view, built once per change in slices (registrations-view.ts)', () => {
  it('builds a namespace once for every reader while nothing changes, and again after a change', async () => {
    server = await createTestServer();
    await register('orders', 8080);
    const reads = applicationOf(server.node).reads;
    const walks = vi.spyOn(reads.views, 'servicesOf');
    const views = new RegistrationsViews(reads);
    const [a, b] = await Promise.all([bodyOf(views, 'default', null), bodyOf(views, 'default', null)]);
    expect(a).toBe(b);
    expect(await bodyOf(views, 'default', null)).toBe(a);
    expect(walks).toHaveBeenCalledTimes(1);
    expect(JSON.parse(a)).toEqual({ namespace: 'default', services: [{ service: 'orders', protocols: { native: 1 } }] });
    await register('Billing', 9000);
    expect(JSON.parse(await bodyOf(views, 'default', 'billing'))).toEqual({
      namespace: 'default',
      services: [{ service: 'Billing', protocols: { native: 1 } }, { service: 'orders', protocols: { native: 1 } }],
      instances: [{ instanceId: '10.0.0.5:9000', protocol: 'native' }],
    });
    expect(walks).toHaveBeenCalledTimes(2);
  });

  it('drops an instance whose lease ran out, with no write in between', async () => {
    server = await createTestServer();
    await register('orders', 8080, { leaseDurationMs: 5_000 });
    await register('orders', 8081, { leaseDurationMs: 600_000 });
    const views = new RegistrationsViews(applicationOf(server.node).reads);
    expect(await servicesOf(views)).toEqual([{ service: 'orders', protocols: { native: 2 } }]);
    await server.clock.advance(5_001);
    expect(await servicesOf(views)).toEqual([{ service: 'orders', protocols: { native: 1 } }]);
  });

  it('yields between slices with the same answer, and keeps no list that saw a change while it was built', async () => {
    server = await createTestServer();
    for (let i = 0; i < 5; i++) await register(`svc-${i}`, 8000 + i);
    const { node } = server;
    const reads = applicationOf(node).reads;
    const whole = await bodyOf(new RegistrationsViews(reads), 'default', null);
    // Every service its own slice: the build yields to the loop before each.
    const spent = vi.spyOn(readsBudget, 'spent').mockReturnValue(true);
    const walks = vi.spyOn(reads.views, 'servicesOf');
    const sliced = new RegistrationsViews(reads);
    expect(await bodyOf(sliced, 'default', null)).toBe(whole);
    expect(spent.mock.calls.length).toBeGreaterThanOrEqual(5);
    expect(walks).toHaveBeenCalledTimes(1);

    // A write lands while a build is between two slices: that list is answered once, not kept.
    let slices = 0;
    spent.mockImplementation(() => {
      if (++slices === 3) node.registry.register(parseRegistration({ service: 'svc-late', host: '10.0.0.6', port: 1 }, 'default', node.config.limits, node.config.cluster));
      return true;
    });
    const changing = new RegistrationsViews(reads);
    await bodyOf(changing, 'default', null);
    spent.mockReturnValue(false);
    const after = JSON.parse(await bodyOf(changing, 'default', null)) as { services: Array<{ service: string }> };
    expect(walks).toHaveBeenCalledTimes(3);
    expect(after.services.map((entry) => entry.service)).toContain('svc-late');
    // That one, built with nothing changing, is kept.
    await bodyOf(changing, 'default', null);
    expect(walks).toHaveBeenCalledTimes(3);
  });

  it('keeps at most KEPT_REGISTRATIONS_MAX namespaces, whatever namespaces clients ask for', async () => {
    server = await createTestServer();
    const views = new RegistrationsViews(applicationOf(server.node).reads);
    for (let i = 0; i < KEPT_REGISTRATIONS_MAX * 3; i++) await views.body(`ns-${i}`, null);
    expect(views.keptCount).toBe(KEPT_REGISTRATIONS_MAX);
  });
});
