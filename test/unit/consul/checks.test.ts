import { describe, expect, it } from 'vitest';
import { planCheckUpdate } from '../../../src/consul/check-update.js';
import { goDurationMs } from '../../../src/consul/duration.js';
import { checksOf, CHECKS_KEY, consulMetadata, tagsOf, userMetaOf, type StoredCheck } from '../../../src/consul/fields.js';
import { leaseForChecks } from '../../../src/consul/lease.js';
import type { InstanceData } from '../../../src/registry/types.js';

const limits = { minLeaseDurationMs: 1_000, maxLeaseDurationMs: 600_000 };
const check = (over: Partial<StoredCheck> = {}): StoredCheck => ({
  id: 'service:web-1',
  name: 'ttl',
  ttlMs: 10_000,
  status: 'passing',
  output: '',
  notes: '',
  deregisterAfterMs: 60_000,
  ...over,
});
const dataWith = (checks: StoredCheck[], status: InstanceData['status'] = 'UP'): InstanceData => ({
  host: '10.0.0.1',
  port: 80,
  securePort: null,
  status,
  weight: 1,
  zone: '',
  metadata: consulMetadata({ team: 'a' }, ['v1'], checks, undefined),
});

describe('goDurationMs', () => {
  it.each([
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['60', 60_000],
    ['0', 0],
  ])('reads %s as %d ms', (text, ms) => expect(goDurationMs(text)).toBe(ms));

  it.each(['', 's', '-1s', '10x', '1m 30s', '10s5'])('refuses %j', (text) => expect(goDurationMs(text)).toBeUndefined());
});

describe('reserved metadata', () => {
  it('keeps tags and checks under consul.* and Meta apart, both ways', () => {
    const metadata = consulMetadata({ team: 'a' }, ['v1', 'primary'], [check()], 3);
    expect(metadata).toMatchObject({ team: 'a', 'consul.tags': '["v1","primary"]', 'consul.warning-weight': '3' });
    expect(tagsOf(metadata)).toEqual(['v1', 'primary']);
    expect(checksOf(metadata)).toEqual([check()]);
    expect(userMetaOf(metadata)).toEqual({ team: 'a' });
  });

  it('reads no tags or checks from values that are not what it wrote', () => {
    expect(tagsOf({ 'consul.tags': 'not json' })).toEqual([]);
    expect(tagsOf({ 'consul.tags': '{"a":1}' })).toEqual([]);
    expect(checksOf({ [CHECKS_KEY]: '[{"id":1}]' })).toEqual([]);
  });

  it('refuses a Meta key under the reserved prefix', () => {
    expect(() => consulMetadata({ 'consul.tags': 'x' }, [], [], undefined)).toThrow(/reserves/);
  });
});

describe('leaseForChecks', () => {
  it.each([
    ['no check: the longest lease', [], 600_000],
    ['healthy: TTL plus DeregisterCriticalServiceAfter', [check()], 70_000],
    ['healthy, several: the longest TTL plus the shortest deregister time', [check(), check({ id: 'b', ttlMs: 30_000, deregisterAfterMs: 120_000 })], 90_000],
    ['critical: DeregisterCriticalServiceAfter', [check({ status: 'critical' })], 60_000],
    ['critical without a deregister time: the longest lease', [check({ status: 'critical', deregisterAfterMs: null })], 600_000],
    ['within the bounds', [check({ ttlMs: 590_000, deregisterAfterMs: 3_600_000 })], 600_000],
  ])('%s', (_name, checks, leaseMs) => expect(leaseForChecks(checks, limits)).toBe(leaseMs));
});

describe('planCheckUpdate', () => {
  it('a pass on a passing check only renews the lease', () => {
    expect(planCheckUpdate(dataWith([check()]), 'service:web-1', { status: 'passing', output: undefined }, limits)).toEqual({ renew: true, write: null, lease: null });
  });

  it('a fail marks the instance DOWN and re-leases it for DeregisterCriticalServiceAfter, without renewing', () => {
    const plan = planCheckUpdate(dataWith([check()]), 'service:web-1', { status: 'critical', output: 'boom' }, limits)!;
    expect(plan.renew).toBe(false);
    expect(plan.lease).toBe(60_000);
    expect(plan.write?.status).toBe('DOWN');
    expect(checksOf(plan.write!.metadata)[0]).toMatchObject({ status: 'critical', output: 'boom' });
  });

  it('a fail on a critical check changes nothing', () => {
    expect(planCheckUpdate(dataWith([check({ status: 'critical' })], 'DOWN'), 'service:web-1', { status: 'critical', output: undefined }, limits)).toEqual({
      renew: false,
      write: null,
      lease: null,
    });
  });

  it('a pass on a critical check brings the instance back UP with its healthy lease', () => {
    const plan = planCheckUpdate(dataWith([check({ status: 'critical' })], 'DOWN'), 'service:web-1', { status: 'passing', output: undefined }, limits)!;
    expect(plan).toMatchObject({ renew: true, lease: 70_000, write: { status: 'UP' } });
  });

  it('a warning keeps the instance UP, writes the state and renews', () => {
    const plan = planCheckUpdate(dataWith([check()]), 'service:web-1', { status: 'warning', output: 'slow' }, limits)!;
    expect(plan).toMatchObject({ renew: true, lease: null, write: { status: 'UP' } });
  });

  it('keeps a status set elsewhere (OUT_OF_SERVICE) when no check is critical', () => {
    const plan = planCheckUpdate(dataWith([check()], 'OUT_OF_SERVICE'), 'service:web-1', { status: 'warning', output: undefined }, limits)!;
    expect(plan.write?.status).toBe('OUT_OF_SERVICE');
  });

  it('answers null for a check the instance does not have', () => {
    expect(planCheckUpdate(dataWith([check()]), 'other', { status: 'passing', output: undefined }, limits)).toBeNull();
  });
});
