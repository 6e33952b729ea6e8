import { describe, expect, it } from 'vitest';
import {
  decideRenewal,
  planOverrideRemoval,
  planRegistration,
  planStatusOverride,
  resolveStatus,
  toEurekaStatus,
  type EurekaData,
  type RegistrationRequest,
} from '../../../src/eureka/status-rules.js';
import type { InstanceStatus } from '../../../src/registry/types.js';
import { eurekaData } from './fixtures.js';

describe('toEurekaStatus', () => {
  it.each([
    ['UP', 'UP'],
    ['up', 'UP'],
    ['Out_Of_Service', 'OUT_OF_SERVICE'],
    ['UNKNOWN', 'UNKNOWN'],
    ['starting', 'STARTING'],
    ['ASLEEP', undefined],
    ['', undefined],
    [7, undefined],
  ])('%j -> %j', (input, expected) => {
    expect(toEurekaStatus(input)).toBe(expected);
  });
});

describe('resolveStatus: first match wins', () => {
  const U = 'UP';
  const D = 'DOWN';
  const S = 'STARTING';
  const O = 'OUT_OF_SERVICE';
  it.each<[InstanceStatus, InstanceStatus | null, InstanceStatus | null, InstanceStatus, string]>([
    // reported, override, existing -> status
    [D, O, U, D, 'rule 1: the client says DOWN, even against an override'],
    [S, U, O, S, 'rule 1: the client says STARTING'],
    [U, O, U, O, 'rule 2: an override beats the client'],
    [U, U, O, U, 'rule 2: an UP override puts it back in service'],
    [O, D, null, D, 'rule 2: an override beats a client saying OUT_OF_SERVICE'],
    [U, null, O, O, 'rule 3: registered OUT_OF_SERVICE stays so'],
    [O, null, U, U, 'rule 3: registered UP stays UP'],
    [U, null, D, U, 'rule 4: registered DOWN, the client says UP'],
    [U, null, S, U, 'rule 4: registered STARTING, the client says UP'],
    [O, null, null, O, 'rule 4: new, the client says OUT_OF_SERVICE'],
    [U, null, null, U, 'rule 4: new and UP'],
  ])('%s / override %s / existing %s -> %s (%s)', (reported, override, existing, expected) => {
    expect(resolveStatus({ reported, override, existing })).toBe(expected);
  });
});

function request(overrides: Partial<RegistrationRequest> = {}, eureka: Partial<EurekaData['eureka']> = {}): RegistrationRequest {
  const data = eurekaData({ eureka });
  return { data, leaseDurationMs: 90_000, overriddenStatus: null, lastDirtyTimestampMs: 2_000, ...overrides };
}

describe('planRegistration', () => {
  it('registers a new instance with the reported status and the body dirty timestamp', () => {
    const plan = planRegistration(request(), undefined, 9_999);
    expect(plan.data.status).toBe('UP');
    expect(plan.data.eureka).toMatchObject({ overriddenStatus: null, lastDirtyTimestampMs: 2_000 });
    expect(plan.leaseDurationMs).toBe(90_000);
  });

  it('stamps now when the body has no dirty timestamp, and keeps the held one on re-register', () => {
    expect(planRegistration(request({ lastDirtyTimestampMs: null }), undefined, 9_999).data.eureka?.lastDirtyTimestampMs).toBe(9_999);
    const held = eurekaData({ eureka: { lastDirtyTimestampMs: 1_500 } });
    const again = planRegistration(request({ lastDirtyTimestampMs: null }), { data: held, leaseDurationMs: 90_000 }, 9_999);
    expect(again.data.eureka?.lastDirtyTimestampMs).toBe(1_500);
  });

  it('keeps the held data when the register is older than it (stale dirty timestamp)', () => {
    const held = eurekaData({ port: 9_000, eureka: { lastDirtyTimestampMs: 5_000 } });
    const plan = planRegistration(request({ lastDirtyTimestampMs: 4_000 }), { data: held, leaseDurationMs: 30_000 }, 9_999);
    expect(plan).toEqual({ data: held, leaseDurationMs: 30_000 });
  });

  it('takes a register with an equal or newer dirty timestamp', () => {
    const held = eurekaData({ port: 9_000, eureka: { lastDirtyTimestampMs: 2_000 } });
    expect(planRegistration(request(), { data: held, leaseDurationMs: 30_000 }, 9_999).data.port).toBe(8080);
  });

  it('keeps a held override over the body, and adopts the body override only when none is held', () => {
    const held = eurekaData({ status: 'OUT_OF_SERVICE', eureka: { overriddenStatus: 'OUT_OF_SERVICE' } });
    const kept = planRegistration(request({ overriddenStatus: 'UP' }), { data: held, leaseDurationMs: 90_000 }, 1);
    expect(kept.data.status).toBe('OUT_OF_SERVICE');
    expect(kept.data.eureka?.overriddenStatus).toBe('OUT_OF_SERVICE');
    const adopted = planRegistration(request({ overriddenStatus: 'OUT_OF_SERVICE' }), undefined, 1);
    expect(adopted.data.status).toBe('OUT_OF_SERVICE');
    expect(adopted.data.eureka?.overriddenStatus).toBe('OUT_OF_SERVICE');
  });

  it('lets the rules decide against an instance registered through /v1', () => {
    const v1 = { ...eurekaData(), status: 'OUT_OF_SERVICE' as const, eureka: undefined };
    expect(planRegistration(request(), { data: v1, leaseDurationMs: 30_000 }, 1).data.status).toBe('OUT_OF_SERVICE');
  });
});

describe('decideRenewal', () => {
  const held = eurekaData({ eureka: { lastDirtyTimestampMs: 5_000, reportedStatus: 'UP' } });

  it.each([
    [{}, { kind: 'renewed', patch: null }],
    [{ lastDirtyTimestampMs: 5_000 }, { kind: 'renewed', patch: null }],
    [{ lastDirtyTimestampMs: 4_000 }, { kind: 'renewed', patch: null }],
    [{ lastDirtyTimestampMs: 5_001 }, { kind: 'register-again' }],
    [{ status: 'UP' as const }, { kind: 'renewed', patch: null }],
  ])('query %j -> %j', (query, expected) => {
    expect(decideRenewal(held, query)).toEqual(expected);
  });

  it('applies a status the client reports for the first time, by the rules', () => {
    const decision = decideRenewal(held, { status: 'DOWN' });
    expect(decision).toEqual({ kind: 'renewed', patch: { status: 'DOWN', eureka: { ...held.eureka, reportedStatus: 'DOWN' } } });
  });

  it('keeps an override when the client reports another status', () => {
    const overridden = eurekaData({ status: 'OUT_OF_SERVICE', eureka: { overriddenStatus: 'OUT_OF_SERVICE', reportedStatus: 'STARTING' } });
    const decision = decideRenewal(overridden, { status: 'UP' });
    expect(decision).toMatchObject({ kind: 'renewed', patch: { status: 'OUT_OF_SERVICE', eureka: { reportedStatus: 'UP' } } });
  });

  it('adopts an overriddenstatus only when none is held', () => {
    expect(decideRenewal(held, { overriddenStatus: 'OUT_OF_SERVICE' })).toMatchObject({
      patch: { status: 'OUT_OF_SERVICE', eureka: { overriddenStatus: 'OUT_OF_SERVICE' } },
    });
    const overridden = eurekaData({ status: 'DOWN', eureka: { overriddenStatus: 'DOWN' } });
    expect(decideRenewal(overridden, { overriddenStatus: 'UP' })).toEqual({ kind: 'renewed', patch: null });
    expect(decideRenewal(held, { overriddenStatus: null })).toEqual({ kind: 'renewed', patch: null });
  });

  it('only renews an instance registered through /v1', () => {
    const v1 = { ...held, eureka: undefined };
    expect(decideRenewal(v1, { status: 'DOWN', lastDirtyTimestampMs: 9e12 })).toEqual({ kind: 'renewed', patch: null });
  });
});

describe('status overrides', () => {
  it('PUT status sets override and status when the status differs, keeping the later dirty timestamp', () => {
    const held = eurekaData({ eureka: { lastDirtyTimestampMs: 5_000 } });
    expect(planStatusOverride(held, 'OUT_OF_SERVICE', 7_000)).toEqual({
      status: 'OUT_OF_SERVICE',
      eureka: { ...held.eureka, overriddenStatus: 'OUT_OF_SERVICE', lastDirtyTimestampMs: 7_000 },
    });
    expect(planStatusOverride(held, 'OUT_OF_SERVICE', 1_000)?.eureka?.lastDirtyTimestampMs).toBe(5_000);
    expect(planStatusOverride(held, 'OUT_OF_SERVICE')?.eureka?.lastDirtyTimestampMs).toBe(5_000);
  });

  it('PUT status equal to the current status changes nothing, as in Eureka', () => {
    expect(planStatusOverride(eurekaData(), 'UP')).toBeNull();
  });

  it('PUT status on a /v1 instance sets the status only', () => {
    expect(planStatusOverride({ ...eurekaData(), eureka: undefined }, 'DOWN')).toEqual({ status: 'DOWN' });
  });

  it('DELETE status removes a held override, to the value given or to what the client reported', () => {
    const overridden = eurekaData({ status: 'OUT_OF_SERVICE', eureka: { overriddenStatus: 'OUT_OF_SERVICE', reportedStatus: 'STARTING' } });
    expect(planOverrideRemoval(overridden, 'UP')).toMatchObject({ status: 'UP', eureka: { overriddenStatus: null } });
    expect(planOverrideRemoval(overridden, undefined)).toMatchObject({ status: 'STARTING', eureka: { overriddenStatus: null } });
  });

  it('DELETE status without a held override changes nothing', () => {
    expect(planOverrideRemoval(eurekaData(), 'DOWN')).toBeNull();
    expect(planOverrideRemoval({ ...eurekaData(), eureka: undefined }, 'DOWN')).toBeNull();
  });
});
