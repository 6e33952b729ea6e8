import { afterEach, describe, expect, it, vi } from 'vitest';
import { ANSWERS_PER_ENCODING_MAX, type ServiceEncoding } from '../../../src/consul/encodings.js';
import { readsBudget } from '../../../src/http/loop-budget.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
});

const nativeRegister = (body: Record<string, unknown>) => t.native.inject({ method: 'POST', url: '/v1/instances', payload: { host: '10.0.0.9', port: 9000, ...body } });
const ids = (url: string) => t.app.inject({ url }).then((response) => (response.json() as { Service: { ID: string } }[]).map((entry) => entry.Service.ID));

/** The Consul encoding kept with the current view of `web` (throws when there is none). */
const kept = (): ServiceEncoding => {
  const holder = t.node.views.encoded<{ built?: ServiceEncoding }>('default', 'web', 'consul', () => {
    throw new Error('not built by the read');
  });
  if (!holder.built) throw new Error('still being built');
  return holder.built;
};

describe('Consul encodings', () => {
  it('send the unfiltered bodies as the shared bytes of the view, not encoded per read', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'a', metadata: { note: 'café' } });
    await nativeRegister({ service: 'web', instanceId: 'b', status: 'DOWN' });
    const health = await t.app.inject({ url: '/v1/health/service/web' });
    const encoding = kept();
    expect(Buffer.isBuffer(encoding.healthJson)).toBe(true);
    expect(health.rawPayload.equals(encoding.healthJson)).toBe(true);
    expect((await t.app.inject({ url: '/v1/health/service/web?passing' })).rawPayload.equals(encoding.healthPassingJson)).toBe(true);
    expect((await t.app.inject({ url: '/v1/catalog/service/web' })).rawPayload.equals(encoding.catalogJson)).toBe(true);
    expect((await t.app.inject({ url: '/v1/health/checks/web' })).rawPayload.equals(encoding.checksJson)).toBe(true);
    expect(kept()).toBe(encoding);
    expect(JSON.parse(encoding.healthPassingJson.toString()).map((entry: { Service: { ID: string } }) => entry.Service.ID)).toEqual(['a']);
    expect(health.headers['content-length']).toBe(String(encoding.healthJson.length));
  });

  it('keep at most ANSWERS_PER_ENCODING_MAX filtered answers, and answer the reads past it all the same', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'a' });
    for (let i = 0; i < ANSWERS_PER_ENCODING_MAX + 6; i++) expect(await ids(`/v1/health/service/web?tag=t-${i}`)).toEqual([]);
    expect(kept().answers.size).toBe(ANSWERS_PER_ENCODING_MAX);
    expect(kept().answersMade).toBe(ANSWERS_PER_ENCODING_MAX + 6);
    expect(await ids('/v1/health/service/web')).toEqual(['a']);
  });

  it('make a near read its answer alone (its order follows the membership, not the view)', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'a' });
    expect(await ids('/v1/health/service/web?near=_agent')).toEqual(['a']);
    expect(await ids('/v1/health/service/web?near=_agent')).toEqual(['a']);
    expect(kept().answersMade).toBe(2);
    expect(kept().answers.size).toBe(0);
  });

  it('are built in slices that yield, once for all the reads that arrive while it runs', async () => {
    t = await createTestConsul();
    for (let i = 0; i < 120; i++) await nativeRegister({ service: 'web', instanceId: `i-${String(i).padStart(3, '0')}` });
    let looks = 0;
    vi.spyOn(readsBudget, 'spent').mockImplementation(() => ++looks > 0);
    const answers = await Promise.all(['/v1/health/service/web', '/v1/health/service/web?passing', '/v1/catalog/service/web'].map((url) => t.app.inject({ url })));
    // One build of 120 instances looks at the budget at instances 0, 50 and 100 and yields each time.
    expect(looks).toBe(3);
    const encoding = kept();
    expect(answers[0]!.rawPayload.equals(encoding.healthJson)).toBe(true);
    expect(answers[1]!.rawPayload.equals(encoding.healthPassingJson)).toBe(true);
    expect(answers[2]!.rawPayload.equals(encoding.catalogJson)).toBe(true);
    expect(answers[0]!.json()).toHaveLength(120);
  });

  it('drop an instance whose lease ended, with no store change in between', async () => {
    // The reaper would make it a store change: let it run only long after.
    t = await createTestConsul({ file: { cluster: { evictionIntervalMs: 60_000 } } });
    await nativeRegister({ service: 'web', instanceId: 'long' });
    await nativeRegister({ service: 'web', instanceId: 'short', leaseDurationMs: 2_000 });
    expect(await ids('/v1/health/service/web')).toEqual(['long', 'short']);
    const revision = t.node.store.revision;
    await t.clock.advance(2_100);
    // The reaper has not evicted it yet: the read itself sees that the lease ended.
    expect(t.node.store.revision).toBe(revision);
    expect(await ids('/v1/health/service/web')).toEqual(['long']);
  });
});
