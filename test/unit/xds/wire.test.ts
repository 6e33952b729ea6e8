import { describe, expect, it } from 'vitest';
import { frameOf } from '../../../src/xds/grpc-framing.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import type { DiscoveryResponse } from '../../../src/xds/stream.js';
import { encodeDiscoveryResponse } from '../../../src/xds/wire.js';

const protos = new XdsProtos();
/** The ADS service's own serializer (protobufjs) for a response that carries no bytes of its own. */
const serialize = (response: DiscoveryResponse) => protos.ads.StreamAggregatedResources!.responseSerialize(response);
const bytes = (length: number, seed: number) => Buffer.from(Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff));

describe('encodeDiscoveryResponse', () => {
  it.each([
    ['no resource', [], '1', '1'],
    ['empty ids and value', [0], '', ''],
    ['values across varint lengths', [1, 127, 128, 16_383, 16_384, 300_000], 'zz', 'zz'],
    ['many resources', Array.from({ length: 500 }, (_, i) => i), 'a1b2', 'a1b2'],
  ])('writes the bytes the service serializer writes: %s', (_, lengths, version, nonce) => {
    const types = [TYPE_URLS.cluster, TYPE_URLS.endpoints, `type.googleapis.com/${'x'.repeat(130)}`];
    const response: DiscoveryResponse = {
      version_info: version,
      resources: lengths.map((length, i) => ({ type_url: types[i % types.length]!, value: bytes(length, i) })),
      type_url: TYPE_URLS.cluster,
      nonce,
    };
    expect(encodeDiscoveryResponse(response).equals(serialize(response))).toBe(true);
    expect(encodeDiscoveryResponse(response, true).equals(frameOf(serialize(response)))).toBe(true);
  });

  it('decodes back to the response with a real Cluster inside', () => {
    const cluster = protos.pack(TYPE_URLS.cluster, { name: 'greeter', type: 'EDS' });
    const response: DiscoveryResponse = { version_info: '7', resources: [cluster], type_url: TYPE_URLS.cluster, nonce: '7' };
    const decoded = protos.ads.StreamAggregatedResources!.responseDeserialize(encodeDiscoveryResponse(response)) as DiscoveryResponse;
    expect(decoded).toMatchObject({ version_info: '7', type_url: TYPE_URLS.cluster, nonce: '7' });
    expect(protos.unpack(decoded.resources[0]!)).toMatchObject({ name: 'greeter', type: 'EDS' });
  });
});
