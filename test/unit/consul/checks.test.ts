import { describe, expect, it } from 'vitest';
import { planCheckUpdate } from '../../../src/consul/check-update.js';
import { goDurationMs } from '../../../src/consul/duration.js';
import {
  CHECKS_KEY,
  checksOf,
  CONSUL_EXTENSION,
  CONSUL_EXTENSION_MAX_BYTES,
  consulExtension,
  consulExtensionOf,
  OUTPUT_MAX_LENGTH,
  tagsOf,
  userMetaOf,
  warningWeightOf,
  type StoredCheck,
} from '../../../src/consul/fields.js';
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
const base = (metadata: Record<string, string>, status: InstanceData['status'] = 'UP'): InstanceData => ({ host: '10.0.0.1', port: 80, securePort: null, status, weight: 1, zone: '', metadata });
const dataWith = (checks: StoredCheck[], status: InstanceData['status'] = 'UP', warningWeight?: number): InstanceData => ({
  ...base({ team: 'a' }, status),
  extensions: { [CONSUL_EXTENSION]: consulExtension('web-1', { team: 'a' }, ['v1'], checks, warningWeight) as never },
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

describe('the consul record extension', () => {
  it('keeps the ID, tags, checks and warning weight in the extension, and Meta as the metadata', () => {
    const data = dataWith([check()], 'UP', 3);
    expect(data.metadata).toEqual({ team: 'a' });
    expect(consulExtensionOf(data)).toEqual({ id: 'web-1', tags: ['v1'], checks: [check()], warningWeight: 3 });
    expect(tagsOf(data)).toEqual(['v1']);
    expect(checksOf(data)).toEqual([check()]);
    expect(warningWeightOf(data)).toBe(3);
  });

  it('still reads the metadata keys of records written before the extension (and /v1 tags)', () => {
    const legacy = base({ team: 'a', 'consul.tags': '["v1","primary"]', [CHECKS_KEY]: JSON.stringify([check()]), 'consul.warning-weight': '2' });
    expect(consulExtensionOf(legacy)).toBeUndefined();
    expect(tagsOf(legacy)).toEqual(['v1', 'primary']);
    expect(checksOf(legacy)).toEqual([check()]);
    expect(warningWeightOf(legacy)).toBe(2);
    expect(userMetaOf(legacy.metadata)).toEqual({ team: 'a' });
  });

  it('reads no tags or checks from values that are not what it wrote', () => {
    expect(tagsOf(base({ 'consul.tags': 'not json' }))).toEqual([]);
    expect(tagsOf(base({ 'consul.tags': '{"a":1}' }))).toEqual([]);
    expect(checksOf(base({ [CHECKS_KEY]: '[{"id":1}]' }))).toEqual([]);
  });

  it('refuses a Meta key under the reserved prefix', () => {
    expect(() => consulExtension('web-1', { 'consul.tags': 'x' }, [], [], undefined)).toThrow(/reserves/);
  });

  it('refuses tags and checks past its bound, counting every output at its longest', () => {
    const tags = Array.from({ length: 64 }, (_, i) => `${i}-${'t'.repeat(250)}`);
    expect(() => consulExtension('web-1', {}, tags, [], undefined)).toThrow(/over the 8192/);
    const checks = Array.from({ length: 16 }, (_, i) => check({ id: `c${i}`, name: 'n'.repeat(200), notes: 'x'.repeat(200) }));
    expect(() => consulExtension('web-1', {}, [], checks, undefined)).toThrow(/Tags, Checks/);
    // What it takes fits: the largest such extension stays within the bound after any update.
    const fits = consulExtension('web-1', {}, ['v1'], [check({ output: 'o'.repeat(OUTPUT_MAX_LENGTH) })], undefined);
    expect(Buffer.byteLength(JSON.stringify(fits))).toBeLessThanOrEqual(CONSUL_EXTENSION_MAX_BYTES);
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
    expect(planCheckUpdate(dataWith([check()]), 'web-1', 'service:web-1', { status: 'passing', output: undefined }, limits)).toEqual({ renew: true, write: null, lease: null });
  });

  it('a fail marks the instance DOWN and re-leases it for DeregisterCriticalServiceAfter, without renewing', () => {
    const plan = planCheckUpdate(dataWith([check()]), 'web-1', 'service:web-1', { status: 'critical', output: 'boom' }, limits)!;
    expect(plan.renew).toBe(false);
    expect(plan.lease).toBe(60_000);
    expect(plan.write?.status).toBe('DOWN');
    expect(checksOf({ ...dataWith([]), extensions: plan.write!.extensions })[0]).toMatchObject({ status: 'critical', output: 'boom' });
  });

  it('a fail on a critical check changes nothing', () => {
    expect(planCheckUpdate(dataWith([check({ status: 'critical' })], 'DOWN'), 'web-1', 'service:web-1', { status: 'critical', output: undefined }, limits)).toEqual({
      renew: false,
      write: null,
      lease: null,
    });
  });

  it('a pass on a critical check brings the instance back UP with its healthy lease', () => {
    const plan = planCheckUpdate(dataWith([check({ status: 'critical' })], 'DOWN'), 'web-1', 'service:web-1', { status: 'passing', output: undefined }, limits)!;
    expect(plan).toMatchObject({ renew: true, lease: 70_000, write: { status: 'UP' } });
  });

  it('a warning keeps the instance UP, writes the state and renews', () => {
    const plan = planCheckUpdate(dataWith([check()]), 'web-1', 'service:web-1', { status: 'warning', output: 'slow' }, limits)!;
    expect(plan).toMatchObject({ renew: true, lease: null, write: { status: 'UP' } });
  });

  it('keeps a status set elsewhere (OUT_OF_SERVICE) when no check is critical', () => {
    const plan = planCheckUpdate(dataWith([check()], 'OUT_OF_SERVICE'), 'web-1', 'service:web-1', { status: 'warning', output: undefined }, limits)!;
    expect(plan.write?.status).toBe('OUT_OF_SERVICE');
  });

  it('an output given without a change of status is not written (only renews): no replicated write per note', () => {
    expect(planCheckUpdate(dataWith([check()]), 'web-1', 'service:web-1', { status: 'passing', output: 'load 0.3' }, limits)).toEqual({ renew: true, write: null, lease: null });
    const warned = planCheckUpdate(dataWith([check({ status: 'warning', output: 'slow' })]), 'web-1', 'service:web-1', { status: 'warning', output: 'slower' }, limits);
    expect(warned).toEqual({ renew: true, write: null, lease: null });
  });

  it('cuts the output written with a status change to OUTPUT_MAX_LENGTH', () => {
    const plan = planCheckUpdate(dataWith([check()]), 'web-1', 'service:web-1', { status: 'critical', output: 'x'.repeat(100_000) }, limits)!;
    expect(checksOf({ ...dataWith([]), extensions: plan.write!.extensions })[0]!.output).toHaveLength(OUTPUT_MAX_LENGTH);
  });

  it('answers null for a check the instance does not have', () => {
    expect(planCheckUpdate(dataWith([check()]), 'web-1', 'other', { status: 'passing', output: undefined }, limits)).toBeNull();
  });
});
