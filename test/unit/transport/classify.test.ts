import { describe, expect, it } from 'vitest';
import { classifyFailure } from '../../../src/transport/transport.js';

describe('classifyFailure', () => {
  it.each([
    [429, 'congestion'],
    [503, 'congestion'],
    [500, 'transient'],
    [502, 'transient'],
    [504, 'transient'],
    [400, 'permanent'],
    [401, 'permanent'],
    [403, 'permanent'],
    [404, 'permanent'],
    [413, 'permanent'],
    [undefined, 'transient'],
  ] as const)('status %s is %s', (status, kind) => {
    expect(classifyFailure(status)).toBe(kind);
  });
});
