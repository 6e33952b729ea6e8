import { describe, expect, it } from 'vitest';
import { LineTooLongError, splitLines } from '../../../src/transport/lines.js';

async function* chunksOf(...parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
}

async function all(source: AsyncIterable<Buffer>, max = 100): Promise<Array<[string, number]>> {
  const out: Array<[string, number]> = [];
  for await (const line of splitLines(source, max)) out.push([line.text, line.bytes]);
  return out;
}

describe('splitLines', () => {
  it('splits on newlines across and within chunks, counting bytes with the newline', async () => {
    expect(await all(chunksOf('ab\ncd', 'e\n\nf', 'g\n'))).toEqual([
      ['ab', 3],
      ['cde', 4],
      ['', 1],
      ['fg', 3],
    ]);
  });

  it('keeps a multi-byte character split between chunks whole', async () => {
    const euro = Buffer.from('€\n');
    async function* split(): AsyncGenerator<Buffer> {
      yield euro.subarray(0, 1);
      yield euro.subarray(1);
    }
    expect(await all(split())).toEqual([['€', 4]]);
  });

  it('yields a last line without its newline', async () => {
    expect(await all(chunksOf('a\nbc'))).toEqual([
      ['a', 2],
      ['bc', 2],
    ]);
  });

  it('refuses a line past the cap as soon as it is seen, ended or not', async () => {
    await expect(all(chunksOf('x'.repeat(11), '\n'), 10)).rejects.toThrow(LineTooLongError);
    await expect(all(chunksOf('x'.repeat(6), 'x'.repeat(6)), 10)).rejects.toThrow('longer than 10 bytes');
    expect(await all(chunksOf('x'.repeat(10), '\n'), 10)).toEqual([['x'.repeat(10), 11]]);
  });
});
