/**
 * The anti-entropy digest: the keyspace is split into a fixed number of buckets by key hash,
 * and each bucket's hash is the XOR of a 64-bit hash of `(key, version, deleted)` of every
 * record in it. XOR makes the digest incremental (a write XORs the old entry out and the new
 * one in), independent of insertion order, and the same on two peers holding the same records.
 */

/** Two independent 32-bit FNV-1a lanes with a final avalanche; not cryptographic. */
export function hash64(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x01000193) ^ (b >>> 15);
  }
  return [avalanche(a), avalanche(b ^ a)];
}

function avalanche(h: number): number {
  let x = h;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Which bucket a key falls in, for a digest of `bucketCount` buckets. */
export function bucketOf(key: string, bucketCount: number): number {
  return hash64(key)[0] % bucketCount;
}

export class BucketDigest {
  private readonly high: Uint32Array;
  private readonly low: Uint32Array;

  constructor(readonly bucketCount: number) {
    this.high = new Uint32Array(bucketCount);
    this.low = new Uint32Array(bucketCount);
  }

  /** XORs an entry in or out (the same call does both); `bucket` is `bucketOf(key)`. */
  toggle(key: string, bucket: number, version: string, deleted: boolean): void {
    const [h1, h2] = hash64(`${key}\u0000${version}\u0000${deleted ? 1 : 0}`);
    this.high[bucket] = ((this.high[bucket] ?? 0) ^ h1) >>> 0;
    this.low[bucket] = ((this.low[bucket] ?? 0) ^ h2) >>> 0;
  }

  /** Every bucket hash, packed as base64 (8 bytes a bucket) for the wire. */
  encodeBuckets(): string {
    const bytes = Buffer.alloc(this.bucketCount * 8);
    for (let i = 0; i < this.bucketCount; i++) {
      bytes.writeUInt32BE(this.high[i] ?? 0, i * 8);
      bytes.writeUInt32BE(this.low[i] ?? 0, i * 8 + 4);
    }
    return bytes.toString('base64');
  }

  /** One hash over all buckets: equal roots mean (with overwhelming odds) equal replicas. */
  rootHash(): string {
    let a = 0;
    let b = 0;
    for (let i = 0; i < this.bucketCount; i++) {
      a = Math.imul(a ^ (this.high[i] ?? 0), 0x01000193) >>> 0;
      b = Math.imul(b ^ (this.low[i] ?? 0), 0x01000193) >>> 0;
      a = (a ^ (b >>> 7)) >>> 0;
    }
    return `${this.bucketCount}:${a.toString(16)}${b.toString(16).padStart(8, '0')}`;
  }

  /** Bucket numbers whose hash differs from `encoded` (another peer's `encodeBuckets()`). */
  differingBuckets(encoded: string): number[] | null {
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length !== this.bucketCount * 8) return null;
    const out: number[] = [];
    for (let i = 0; i < this.bucketCount; i++) {
      if (bytes.readUInt32BE(i * 8) !== this.high[i] || bytes.readUInt32BE(i * 8 + 4) !== this.low[i]) {
        out.push(i);
      }
    }
    return out;
  }
}
