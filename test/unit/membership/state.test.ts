import { describe, expect, it } from 'vitest';
import { nextState } from '../../../src/membership/state.js';

describe('nextState', () => {
  it.each([
    ['up', 'ack', 'up'],
    ['up', 'no-ack', 'suspect'],
    ['up', 'suspicion-timeout', 'up'],
    ['suspect', 'ack', 'up'],
    ['suspect', 'no-ack', 'suspect'],
    ['suspect', 'suspicion-timeout', 'down'],
    ['down', 'ack', 'up'],
    ['down', 'no-ack', 'down'],
    ['down', 'suspicion-timeout', 'down'],
  ] as const)('%s + %s -> %s', (state, outcome, expected) => {
    expect(nextState(state, outcome)).toBe(expected);
  });
});
