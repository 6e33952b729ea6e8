import { describe, expect, it } from 'vitest';
import { ByteBuilder } from '../../../src/http/byte-builder.js';

describe('ByteBuilder', () => {
  it('takes what was appended as UTF-8, growing past its first size, and is empty after a take', () => {
    const bytes = new ByteBuilder(4);
    const pieces = ['{"a":', '"é€😀"', ',', 'x'.repeat(5_000), '}'];
    for (const piece of pieces) bytes.append(piece);
    const taken = bytes.take();
    expect(taken.length).toBe(Buffer.byteLength(pieces.join('')));
    expect(taken.toString('utf8')).toBe(pieces.join(''));
    expect(bytes.take().length).toBe(0);
    bytes.append('next');
    expect(bytes.take().toString()).toBe('next');
    // A taken buffer is its own copy: later appends do not write into it.
    expect(taken.subarray(0, 5).toString()).toBe('{"a":');
  });

  it('writes a lone surrogate as JSON.stringify then Buffer.from would', () => {
    const bytes = new ByteBuilder(1);
    const text = JSON.stringify('\ud800 and \udc00');
    bytes.append(text);
    expect(bytes.take().equals(Buffer.from(text))).toBe(true);
    const raw = 'a\ud800b';
    bytes.append(raw);
    expect(bytes.take().equals(Buffer.from(raw))).toBe(true);
  });
});
