import type { DiscoveryResponse } from './stream.js';

/**
 * The bytes of a state-of-the-world DiscoveryResponse, written by hand: the same bytes as the
 * ADS service's own serializer (protobufjs: fields in number order, each present field
 * written; a unit test compares them), in one buffer sized first, each resource's bytes
 * copied once. protobufjs goes through a generic writer per field and took about 3 s for a
 * wildcard response of 200,000 Clusters, in one turn of the event loop (bench/xds-wildcard.ts).
 *
 * With `framed`, the bytes come as the gRPC frame that carries them (grpc-framing.ts frameOf).
 * `DiscoveryResponseWriter` writes the same bytes in steps.
 *
 * DiscoveryResponse (envoy/service/discovery/v3/discovery.proto): version_info = 1,
 * resources = 2 (repeated google.protobuf.Any: type_url = 1, value = 2), type_url = 4, nonce = 5.
 */
export function encodeDiscoveryResponse(response: DiscoveryResponse, framed = false): Buffer {
  const writer = new DiscoveryResponseWriter(response, framed);
  writer.write(Infinity);
  return writer.bytes;
}

/**
 * `encodeDiscoveryResponse` in steps: the size and the buffer first, then the resources' bytes
 * a bounded amount at a time (`write`), so that a response of tens of MB (every Cluster of
 * 200,000 services, every endpoint of 1,000,000 instances) is copied over several turns of the
 * event loop, not in one (responses.ts).
 */
export class DiscoveryResponseWriter {
  private out: Buffer | undefined;
  /** Resources sized so far (the first steps), then written so far. */
  private sized = 0;
  private size = 0;
  private at = 0;
  private next = 0;
  private readonly typeUrlBytes: (text: string) => Buffer;

  constructor(
    private readonly response: DiscoveryResponse,
    private readonly framed: boolean,
  ) {
    // Every resource of a response has the same type URL, or one of a few: its bytes are made once.
    const typeUrls = new Map<string, Buffer>();
    let lastText = '';
    let lastBytes: Buffer = Buffer.alloc(0);
    this.typeUrlBytes = (text: string) => {
      if (text === lastText) return lastBytes;
      let bytes = typeUrls.get(text);
      if (bytes === undefined) typeUrls.set(text, (bytes = Buffer.from(text, 'utf8')));
      lastText = text;
      return (lastBytes = bytes);
    };
  }

  /** The response's bytes (its gRPC frame when `framed`); whole once `write` answered true. */
  get bytes(): Buffer {
    if (this.out === undefined) throw new Error('the response is not sized yet: write() first');
    return this.out;
  }

  /**
   * Sizes the response (first, `maxBytes / SIZE_STEP_BYTES` resources a call), then writes
   * resources until `maxBytes` more were written (at least one resource) or all were; true
   * once the response is whole.
   */
  write(maxBytes: number): boolean {
    const { response } = this;
    const { resources } = response;
    if (this.out === undefined && !this.sizeSome(maxBytes)) return false;
    const out = this.out!;
    if (this.next > resources.length) return true;
    let at = this.at;
    const until = at + maxBytes;
    let next = this.next;
    while (next < resources.length && (at < until || next === this.next)) {
      const any = resources[next++]!;
      const typeUrl = this.typeUrlBytes(any.type_url);
      const { value } = any;
      out[at++] = 0x12;
      at = writeVarint(out, at, anySize(typeUrl.length, value.length));
      out[at++] = 0x0a;
      at = writeVarint(out, at, typeUrl.length);
      // TypedArray.set: Buffer.copy checks its arguments on every call, a third of the time here.
      out.set(typeUrl, at);
      at += typeUrl.length;
      out[at++] = 0x12;
      at = writeVarint(out, at, value.length);
      out.set(value, at);
      at += value.length;
    }
    if (next === resources.length) {
      at = writeString(out, at, 0x22, response.type_url);
      at = writeString(out, at, 0x2a, response.nonce);
      next += 1;
    }
    this.at = at;
    this.next = next;
    return next > resources.length;
  }

  /** Sizes up to `maxBytes / SIZE_STEP_BYTES` more resources; once all are, makes the buffer and its head, and answers true. */
  private sizeSome(maxBytes: number): boolean {
    const { response } = this;
    const { resources } = response;
    const until = Math.min(resources.length, this.sized + Math.max(1, Math.floor(maxBytes / SIZE_STEP_BYTES)));
    let size = this.size;
    for (let i = this.sized; i < until; i++) {
      const any = resources[i]!;
      size += bytesFieldSize(anySize(this.typeUrlBytes(any.type_url).length, any.value.length));
    }
    this.size = size;
    this.sized = until;
    if (until < resources.length) return false;
    size += stringFieldSize(Buffer.byteLength(response.version_info));
    size += stringFieldSize(Buffer.byteLength(response.type_url)) + stringFieldSize(Buffer.byteLength(response.nonce));
    // Framed: the gRPC frame's 5 bytes first (flag 0, the length), so the message is never copied into one.
    const headroom = this.framed ? FRAME_HEADER_BYTES : 0;
    const out = Buffer.allocUnsafe(headroom + size);
    if (this.framed) {
      out.writeUInt8(0, 0);
      out.writeUInt32BE(size, 1);
    }
    this.at = writeString(out, headroom, 0x0a, response.version_info);
    this.out = out;
    return true;
  }
}

/**
 * A write's byte budget spent per resource sized: sizing one (its lengths, a varint's size) costs
 * about what copying 64 bytes does, so a 4 MB step sizes 65,536 resources (about 13 ms at
 * 200,000 Clusters, where the whole size pass took about 40 ms in one turn).
 */
const SIZE_STEP_BYTES = 64;

const FRAME_HEADER_BYTES = 5;

/** The size of an Any's body: its type_url and value fields. */
function anySize(typeUrlLength: number, valueLength: number): number {
  return stringFieldSize(typeUrlLength) + bytesFieldSize(valueLength);
}

/** One-byte tag, the length as a varint, the bytes. */
function bytesFieldSize(length: number): number {
  return 1 + varintSize(length) + length;
}

const stringFieldSize = bytesFieldSize;

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size += 1;
  }
  return size;
}

function writeVarint(out: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}

function writeString(out: Buffer, at: number, tag: number, text: string): number {
  const length = Buffer.byteLength(text);
  out[at++] = tag;
  at = writeVarint(out, at, length);
  return at + out.write(text, at, length, 'utf8');
}
