import { describe, expect, it } from 'vitest';
import { table } from '../../../src/cli/format.js';

describe('the CLI table', () => {
  it('aligns columns under upper-case headers, two spaces apart', () => {
    expect(table(['id', 'port'], [['a', 1], ['bbb', 22]])).toBe('ID   PORT\na    1\nbbb  22');
  });

  it('lays out 200,000 rows (more than a call takes as arguments)', () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [`i-${i}`, i]);
    const lines = table(['id', 'port'], rows).split('\n');
    expect(lines).toHaveLength(200_001);
    expect(lines[200_000]).toBe('i-199999  199999');
  });
});
