import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { announcesBody, verifiedAsItArrives } from '../../../../src/http/access/signed-body.js';
import { sha256Hex } from '../../../../src/security/peer-signature.js';

describe('announcesBody', () => {
  it.each<[Record<string, string>, boolean]>([
    [{}, false],
    [{ 'content-length': '0' }, false],
    [{ 'content-length': '12' }, true],
    [{ 'transfer-encoding': 'chunked' }, true],
    [{ 'content-length': '0', 'transfer-encoding': 'chunked' }, true],
  ])('%o: %s', (headers, expected) => {
    expect(announcesBody(headers)).toBe(expected);
  });
});

describe('verifiedAsItArrives', () => {
  const chunks = ['{"from":', '"peer-x",', '"records":[]}'];

  it('passes the bytes through unchanged and verifies the digest of all of them, once, at the end', async () => {
    const digests: string[] = [];
    const out = verifiedAsItArrives(Readable.from(chunks.map((chunk) => Buffer.from(chunk))), (digest) => {
      digests.push(digest);
      return undefined;
    });
    expect(await text(out)).toBe(chunks.join(''));
    expect(digests).toEqual([sha256Hex(chunks.join(''))]);
  });

  it('fails the stream with the refusal, so the parser never sees the end of the body', async () => {
    const refusal = new Error('bad signature');
    const out = verifiedAsItArrives(Readable.from([Buffer.from('{}')]), () => refusal);
    await expect(text(out)).rejects.toBe(refusal);
  });

  it('fails the stream when the body itself fails (a connection reset)', async () => {
    const reset = new Error('aborted');
    const source = new Readable({ read() {} });
    const out = verifiedAsItArrives(source, () => undefined);
    source.push(Buffer.from('{"partial":'));
    source.destroy(reset);
    await expect(text(out)).rejects.toBe(reset);
  });
});
