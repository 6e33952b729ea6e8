import { describe, expect, it } from 'vitest';
import { sourceFilter } from '../../../src/dns/listener.js';

describe('DNS source filter', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.1', false],
    ['::2', false],
    ['', false],
    ['not an address', false],
  ])('the default networks let %s ask: %s', (address, allowed) => {
    expect(sourceFilter(['127.0.0.0/8', '::1/128'])(address)).toBe(allowed);
  });

  it('takes other networks of both families', () => {
    const allowed = sourceFilter(['10.1.0.0/16', 'fd00::/8']);
    expect([allowed('10.1.200.3'), allowed('10.2.0.1'), allowed('fd12::5'), allowed('127.0.0.1')]).toEqual([true, false, true, false]);
  });
});
