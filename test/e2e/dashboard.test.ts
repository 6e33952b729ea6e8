import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type Browser } from '../support/browser.js';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core) against three
 * real peers. Screenshots go to test-artifacts/.
 */
let cluster: RealCluster;
let browser: Browser;

beforeAll(async () => {
  cluster = await RealCluster.start({
    size: 3,
    // Self-preservation may judge from 5 owned instances at once, over a 2 s window.
    cluster: { selfPreservationMinInstances: 5, selfPreservationWarmUpMs: 0, renewalWindowMs: 2_000 },
  });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

const register = (peerId: string, service: string, instanceId: string, extra: Record<string, unknown> = {}) =>
  callJson('POST', `${cluster.url(peerId)}/v1/instances`, { service, host: '10.0.0.5', port: 8080, instanceId, leaseDurationMs: 600_000, ...extra });

describe('the dashboard, in chromium, against a 3-peer cluster', () => {
  it('shows the cluster, and an instance registered on another peer appears without a reload', async () => {
    const page = await browser.page();
    await page.goto(`${cluster.url('peer-a')}/`);
    await page.waitForSelector('#live.on');
    await page.waitForSelector('#peers tr[data-peer="peer-c"] [data-state="up"]');
    expect(await page.locator('#peers tbody tr').count()).toBe(3);
    // Every peer up, waited for: on a loaded machine one may still be suspect just after start.
    await page.waitForSelector('#cluster-summary:has-text("3 peers: 3 up")', { timeout: 15_000 });
    expect(await page.textContent('#cluster-summary')).toContain('3 peers: 3 up');
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));

    expect((await register('peer-b', 'orders', 'orders-1', { zone: 'z1', metadata: { version: '1.4.2' } })).status).toBe(201);
    const row = page.locator('#services [data-service="orders"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('orders');
    await row.click();
    const instance = page.locator('#instances [data-instance="orders-1"]');
    await instance.waitFor();
    const text = await instance.textContent();
    for (const part of ['orders-1', '10.0.0.5:8080', 'UP', 'z1', 'version=1.4.2', 'peer-b']) expect(text).toContain(part);
    expect(await instance.locator('.lease').textContent()).toMatch(/^\d+m\d\ds$/);

    // A second instance and a status change come through the watch stream too.
    await register('peer-c', 'orders', 'orders-2');
    await page.locator('#instances [data-instance="orders-2"]').waitFor();
    await callJson('PUT', `${cluster.url('peer-b')}/v1/services/orders/instances/orders-1/status`, { status: 'OUT_OF_SERVICE' });
    await page.locator('#instances [data-instance="orders-1"] .status-OUT_OF_SERVICE').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42);

    // The search box narrows the lists.
    await page.fill('#search', 'orders-2');
    await waitFor(async () => (await page.locator('#instances [data-instance]').count()) === 1, 5_000, 'the search to narrow the instances');
    await page.fill('#search', '');
    await browser.screenshot(page, 'dashboard-instance-appears');
    const phone = await browser.page({ width: 390, height: 844 });
    await phone.goto(`${cluster.url('peer-a')}/?service=orders`);
    await phone.locator('#instances [data-instance="orders-2"]').waitFor();
    await browser.screenshot(phone, 'dashboard-phone');
    await phone.close();
    await page.close();
    expect(browser.errors).toEqual([]);
  });

  it('shows the protocols served and their load live, and which protocol registered each instance, with a filter', async () => {
    const url = cluster.url('peer-a');
    // "legacy" has one instance registered through Eureka and one through /v1; "modern" only /v1.
    expect((await register('peer-a', 'legacy', 'legacy-native')).status).toBe(201);
    expect((await register('peer-a', 'modern', 'modern-1')).status).toBe(201);
    const eurekaInstance = {
      app: 'LEGACY', hostName: 'legacy-1.local', ipAddr: '10.0.0.7', port: { $: 8080, '@enabled': true }, vipAddress: 'legacy', status: 'UP',
      dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
    };
    const eureka = await request(`${url}/eureka/v2/apps/LEGACY`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance: eurekaInstance }) });
    await eureka.body.dump();
    expect(eureka.statusCode).toBe(204);

    const page = await browser.page();
    await page.goto(`${url}/?service=legacy`);
    await page.waitForSelector('#live.on');
    const native = page.locator('#protocols tr[data-protocol="native"]');
    await native.waitFor();
    expect(await native.locator('.listener').textContent()).toBe(`${url}/v1 (HTTP)`);
    expect(await page.locator('#protocols tr[data-protocol="dns"] .listener').textContent()).toBe('off');
    expect(await page.textContent('#protocols-summary')).toMatch(/^3 of \d+ listeners on/);

    // Eureka clients fetching: the panel turns the counts into a rate, live (bounded load: at most 10 s).
    const rate = page.locator('#protocols tr[data-protocol="eureka"] .rps');
    const until = Date.now() + 10_000;
    let loading = true;
    const load = (async () => {
      while (loading && Date.now() < until) {
        const answer = await request(`${url}/eureka/v2/apps/LEGACY`, { headers: { accept: 'application/json' } });
        await answer.body.dump();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await waitFor(async () => /^(?!0$)\d/.test((await rate.textContent()) ?? ''), 10_000, 'the Eureka row to show requests per second');
    } finally {
      loading = false;
      await load;
    }
    expect(Number((await page.locator('#protocols tr[data-protocol="eureka"] .requests').textContent())!.replace(/,/g, ''))).toBeGreaterThan(1);

    // Each instance says which protocol registered it.
    await page.locator('#instances [data-instance="legacy-1.local"] [data-via="eureka"]').waitFor();
    await page.locator('#instances [data-instance="legacy-native"] [data-via="native"]').waitFor();
    await browser.screenshot(page, 'dashboard-protocols');

    // The migration view: services still registered through Eureka, and only those instances.
    await page.selectOption('#via', 'eureka');
    await waitFor(async () => (await page.locator('#services [data-service="modern"]').count()) === 0, 5_000, 'modern to be filtered out');
    expect(await page.locator('#services [data-service="legacy"]').count()).toBe(1);
    expect(await page.textContent('#services-summary')).toContain('1 service still registered through Eureka');
    await waitFor(async () => (await page.locator('#instances [data-instance]').count()) === 1, 5_000, 'only the Eureka instance');
    expect(await page.locator('#instances [data-instance="legacy-1.local"]').count()).toBe(1);
    expect(new URL(page.url()).searchParams.get('via')).toBe('eureka');
    await browser.screenshot(page, 'dashboard-registered-through-eureka');
    await page.selectOption('#via', '');
    await page.locator('#services [data-service="modern"]').waitFor();
    await page.close();
    expect(browser.errors).toEqual([]);
  });

  it('shows the self-preservation banner, in plain words, while it is on', async () => {
    const page = await browser.page();
    await page.goto(`${cluster.url('peer-a')}/`);
    await page.waitForSelector('#live.on');
    expect(await page.locator('#banner-self-preservation').count()).toBe(0);
    // Ten clients register on peer-a, heartbeat once, and then fall silent: their heartbeats stop
    // all at once. (Instances that never heartbeat are not expected to, and would not trip it.)
    const ids = Array.from({ length: 10 }, (_, i) => `quiet-${i}`);
    for (const id of ids) expect((await register('peer-a', 'quiet', id, { leaseDurationMs: 60_000 })).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const id of ids) expect((await callJson('PUT', `${cluster.url('peer-a')}/v1/services/quiet/instances/${id}/heartbeat`)).status).toBe(200);
    const banner = page.locator('#banner-self-preservation');
    await banner.waitFor({ timeout: 15_000 });
    const text = await banner.textContent();
    expect(text).toContain('Self-preservation is ON: this peer has stopped evicting instances');
    expect(text).toContain('network problem');
    expect(text).toMatch(/the 10 instances it owns should have sent about \d+/);
    const guards = (await callJson('GET', `${cluster.url('peer-a')}/v1/admin/eviction-guards`)).body;
    expect(guards.selfPreservation.active).toBe(true);
    await browser.screenshot(page, 'dashboard-self-preservation');

    // The clients come back: heartbeats recover and the banner goes away by itself.
    let heartbeating = true;
    const beat = (async () => {
      while (heartbeating) {
        await Promise.all(ids.map((id) => callJson('PUT', `${cluster.url('peer-a')}/v1/services/quiet/instances/${id}/heartbeat`)));
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    try {
      await banner.waitFor({ state: 'detached', timeout: 15_000 });
    } finally {
      heartbeating = false;
      await beat;
    }
    await Promise.all(ids.map((id) => callJson('DELETE', `${cluster.url('peer-a')}/v1/services/quiet/instances/${id}`)));
    await page.close();
    expect(browser.errors).toEqual([]);
  });

  it('switches namespace, and sends a saved token with every call, the watch stream included', async () => {
    const page = await browser.page();
    const authorizations = new Map<string, string | undefined>();
    page.on('request', (request) => authorizations.set(new URL(request.url()).pathname, request.headers().authorization));
    await page.goto(`${cluster.url('peer-a')}/`);
    await page.waitForSelector('#live.on');
    expect(authorizations.get('/v1/watch')).toBeUndefined();

    await callJson('POST', `${cluster.url('peer-b')}/v1/instances?namespace=team-a`, { service: 'payments', host: '10.0.0.9', port: 443, leaseDurationMs: 600_000 });
    await page.fill('#namespace', 'team-a');
    await page.press('#namespace', 'Enter');
    await page.locator('#services [data-service="payments"]').waitFor();
    expect(await page.locator('#services [data-service="orders"]').count()).toBe(0);
    expect(new URL(page.url()).searchParams.get('namespace')).toBe('team-a');

    await page.click('.token summary');
    await page.fill('#token', 't0ken');
    await page.click('#token-form button');
    await waitFor(() => authorizations.get('/v1/watch') === 'Bearer t0ken' && authorizations.get('/v1/cluster') === 'Bearer t0ken', 5_000, 'calls with the token');
    // The token is kept for the next visit, and no URL ever carries it.
    await page.reload();
    await page.waitForSelector('#live.on');
    expect(authorizations.get('/v1/watch')).toBe('Bearer t0ken');
    expect(browser.requests.some((url) => url.includes('t0ken'))).toBe(false);
    await page.evaluate(() => (globalThis as unknown as { localStorage: { clear(): void } }).localStorage.clear());
    await page.close();
    expect(browser.errors).toEqual([]);
  });

  it('loads nothing from anywhere but the peers, and the API description page renders offline too', async () => {
    const page = await browser.page();
    await page.goto(`${cluster.url('peer-a')}/docs`);
    await page.locator('.opblock-summary-path', { hasText: '/v1/services/{service}/instances/{id}/heartbeat' }).first().waitFor();
    expect(await page.locator('.opblock-tag', { hasText: 'Eureka /eureka/v2' }).count()).toBeGreaterThan(0);
    await browser.screenshot(page, 'api-docs');
    await page.close();
    const peers = cluster.ids.map((id) => new URL(cluster.url(id)).origin);
    const elsewhere = browser.requests.filter((url) => !url.startsWith('data:') && !peers.some((origin) => url.startsWith(`${origin}/`)));
    expect(elsewhere).toEqual([]);
    expect(browser.requests.length).toBeGreaterThan(10);
    expect(browser.errors).toEqual([]);
  });

  it('shows a killed peer turning down', async () => {
    const page = await browser.page();
    await page.goto(`${cluster.url('peer-a')}/`);
    await page.waitForSelector('#peers tr[data-peer="peer-c"] [data-state="up"]');
    await cluster.kill('peer-c');
    await page.waitForSelector('#peers tr[data-peer="peer-c"] [data-state="down"]', { timeout: 15_000 });
    // peer-b may show suspect for a moment after a slow probe: wait for the summary rather than read it once.
    await page.waitForSelector('#cluster-summary:has-text("3 peers: 2 up, 1 down")', { timeout: 15_000 });
    expect(await page.textContent('#banner-peers-down')).toContain('A peer is down: peer-c');
    await browser.screenshot(page, 'dashboard-peer-down');
    await page.close();
    expect(browser.errors).toEqual([]);
  });
});
