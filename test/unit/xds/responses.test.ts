import { describe, expect, it } from 'vitest';
import { PRE_FRAMED } from '../../../src/xds/grpc-framing.js';
import { PRE_ENCODED, TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { ResponseEncoder, type NamedResource } from '../../../src/xds/responses.js';
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
