import * as zlib from 'node:zlib';

/**
 * CRC-32 (IEEE 802.3, the zlib/PNG/gzip polynomial), the checksum of every frame on disk.
 * It detects every burst error up to 32 bits and all but 1 in 2^32 of the rest, which is what
 * a torn write or a flipped sector looks like; it is not a defence against tampering.
 * Node 20.15+ computes it natively (`zlib.crc32`); older Node 20 releases use the table below.
 */
export type Crc32 = (data: Uint8Array, initial?: number) => number;

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The portable implementation, one table lookup a byte; also the reference in the tests. */
export const crc32Table: Crc32 = (data, initial = 0) => {
  let crc = (initial ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = (TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)) >>> 0;
  return (crc ^ 0xffffffff) >>> 0;
};

const native = (zlib as { crc32?: (data: Uint8Array, initial?: number) => number }).crc32;

/** CRC-32 of `data`, continuing from `initial` (the CRC of what came before it). */
export const crc32: Crc32 = native ? (data, initial = 0) => native(data, initial) : crc32Table;
