import { describe, expect, it, vi } from 'vitest';
import { PRE_FRAMED } from '../../../src/xds/grpc-framing.js';
import { PRE_ENCODED, TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { isFramed, ResponseEncoder, whenFramed, type NamedResource } from '../../../src/xds/responses.js';
import type { DiscoveryResponse } from '../../../src/xds/stream.js';

const protos = new XdsProtos();

/** What protobufjs makes of a response, from a plain copy (the serializer sends a pre-encoded response's own bytes). */
const protobufjsBytes = (response: DiscoveryResponse): Buffer =>
  protos.ads.StreamAggregatedResources!.responseSerialize({ version_info: response.version_info, resources: response.resources, type_url: response.type_url, nonce: response.nonce });

/** An encoder over the real ADS encoding that counts its encodes. */
function countingEncoder(): { encoder: ResponseEncoder; encodes: () => number } {
  let encodes = 0;
  const encoder = new ResponseEncoder((response) => {
    encodes += 1;
    return protos.frameResponse(response);
  });
  return { encoder, encodes: () => encodes };
}

const resource = (name: string, version: number): NamedResource => ({ name, version, any: { type_url: TYPE_URLS.endpoints, value: Buffer.from(`${name}@${version}`) } });

describe('responses shared within a push', () => {
  it('gives streams asking for the same resources, in a row or not, one response encoded once; any other resource, version or type another', () => {
    const { encoder, encodes } = countingEncoder();
    const got: DiscoveryResponse[] = [];
    encoder.push(() => {
      // Each stream builds its own list, as AdsStream.send does.
      for (let stream = 0; stream < 100; stream += 1) got.push(encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)]));
      got.push(encoder.response(TYPE_URLS.endpoints, [resource('other', 1)]));
      got.push(encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)]));
      got.push(encoder.response(TYPE_URLS.endpoints, [resource('greeter', 2)]));
      got.push(encoder.response(TYPE_URLS.cluster, [resource('greeter', 1)]));
      got.push(encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1), resource('other', 1)]));
      got.push(encoder.response(TYPE_URLS.endpoints, []));
    });
    expect(new Set(got.slice(0, 100)).size).toBe(1);
    expect(got[101]).toBe(got[0]);
    expect(new Set([got[0], got[100], got[102], got[103], got[104], got[105]]).size).toBe(6);
    expect(encodes()).toBe(6);
    // Every distinct response has its own nonce, and version_info is its nonce.
    const distinct = [got[0]!, got[100]!, got[102]!, got[103]!, got[104]!, got[105]!];
    expect(new Set(distinct.map((response) => response.nonce)).size).toBe(6);
    for (const response of distinct) expect(response.version_info).toBe(response.nonce);
  });

  it('carries bytes that decode to the response it is, and its gRPC frame around the same bytes', () => {
    const { encoder } = countingEncoder();
    let response!: ReturnType<ResponseEncoder['response']>;
    encoder.push(() => {
      encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)]);
      response = encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1), resource('other', 3)]);
    });
    const decoded = protos.ads.StreamAggregatedResources!.responseDeserialize(response[PRE_ENCODED]) as DiscoveryResponse;
    expect(decoded).toMatchObject({ version_info: response.version_info, nonce: response.nonce, type_url: TYPE_URLS.endpoints });
    expect(decoded.resources.map((any) => Buffer.from(any.value).toString())).toEqual(['greeter@1', 'other@3']);
    expect(response[PRE_ENCODED].equals(protobufjsBytes(response))).toBe(true);
    expect(response[PRE_FRAMED].subarray(5).equals(response[PRE_ENCODED])).toBe(true);
    expect(response[PRE_FRAMED].readUInt32BE(1)).toBe(response[PRE_ENCODED].length);
  });

  it('shares nothing outside a push, nor from one push to the next', () => {
    const { encoder, encodes } = countingEncoder();
    const alone = [encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)]), encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)])];
    let first!: DiscoveryResponse;
    let second!: DiscoveryResponse;
    encoder.push(() => (first = encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)])));
    encoder.push(() => (second = encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)])));
    // The answer to a request right after a push is its stream's own too.
    const after = encoder.response(TYPE_URLS.endpoints, [resource('greeter', 1)]);
    expect(new Set([...alone, first, second, after]).size).toBe(5);
    expect(encodes()).toBe(5);
  });
});

describe('responses framed in turns', () => {
  /** An encoder writing at most `bytesPerTurn` a turn, its turns run by hand (`turn()`). */
  function inTurns(bytesPerTurn: number) {
    const queued: (() => void)[] = [];
    const encoder = new ResponseEncoder((response) => protos.frameResponse(response), { writer: (response) => protos.responseWriter(response), bytesPerTurn, later: (run) => queued.push(run) });
    const turn = () => queued.shift()?.();
    return { encoder, queued, turn };
  }
  const many = (count: number) => Array.from({ length: count }, (_, i) => resource(`service-${i}`, i + 1));

  it('writes a frame larger than a turn over several turns, the same bytes in the end, and tells every waiter once, in order', () => {
    const { encoder, queued, turn } = inTurns(64);
    const response = encoder.response(TYPE_URLS.endpoints, many(20));
    expect(isFramed(response)).toBe(false);
    const told: string[] = [];
    whenFramed(response, (error) => told.push(`first ${String(error)}`));
    whenFramed(response, (error) => told.push(`second ${String(error)}`));
    let turns = 0;
    while (queued.length > 0) {
      expect(told).toEqual([]);
      turn();
      turns += 1;
    }
    // 64 bytes a turn: one resource sized a turn (a size step is 64 bytes' worth), then, the
    // buffer made, one of the 20 resources of about 80 bytes copied a turn; the first call was
    // the response's own, in its caller's turn.
    expect(turns).toBe(38);
    expect(told).toEqual(['first undefined', 'second undefined']);
    expect(isFramed(response)).toBe(true);
    expect(response[PRE_FRAMED].equals(protos.frameResponse(response))).toBe(true);
    expect(response[PRE_ENCODED].equals(protobufjsBytes(response))).toBe(true);
    // Asked once whole: at once.
    whenFramed(response, () => told.push('late'));
    expect(told.at(-1)).toBe('late');
  });

  it('frames a response that fits one turn at once, as without turns', () => {
    const { encoder, queued } = inTurns(1_000_000);
    const response = encoder.response(TYPE_URLS.endpoints, many(20));
    expect(queued).toHaveLength(0);
    expect(isFramed(response)).toBe(true);
    expect(response[PRE_FRAMED].equals(protos.frameResponse(response))).toBe(true);
  });

  it('shares a response framed in turns within a push, written once', () => {
    const { encoder, queued, turn } = inTurns(64);
    const writers = vi.spyOn(protos, 'responseWriter');
    try {
      const got: ReturnType<ResponseEncoder['response']>[] = [];
      encoder.push(() => {
        for (let stream = 0; stream < 10; stream += 1) got.push(encoder.response(TYPE_URLS.endpoints, many(20)));
      });
      expect(new Set(got).size).toBe(1);
      expect(writers).toHaveBeenCalledTimes(1);
      while (queued.length > 0) turn();
      expect(isFramed(got[0]!)).toBe(true);
    } finally {
      writers.mockRestore();
    }
  });

  it('tells the waiters of a frame whose writing threw the error, and the response is not framed', () => {
    const queued: (() => void)[] = [];
    const failure = new Error('disk on fire');
    let steps = 0;
    const encoder = new ResponseEncoder((response) => protos.frameResponse(response), {
      writer: () => ({ bytes: Buffer.alloc(10), write: () => (steps++ === 0 ? false : (() => { throw failure; })()) }),
      bytesPerTurn: 1,
      later: (run) => queued.push(run),
    });
    const response = encoder.response(TYPE_URLS.endpoints, many(2));
    const told: unknown[] = [];
    whenFramed(response, (error) => told.push(error));
    while (queued.length > 0) queued.shift()!();
    expect(told).toEqual([failure]);
    expect(isFramed(response)).toBe(false);
  });
});
