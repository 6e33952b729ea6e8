import type { VersionedResource } from './catalog.js';
import { frameOf, PRE_FRAMED } from './grpc-framing.js';
import { PRE_ENCODED } from './protos.js';
import type { DiscoveryResponse } from './stream.js';

/** A resource of a response: its name and version say which bytes it is. */
export interface NamedResource extends VersionedResource {
  name: string;
}

/** A response that carries its bytes: the ADS service sends them as they are (protos.ts). */
export interface EncodedResponse extends DiscoveryResponse {
  readonly [PRE_ENCODED]: Buffer;
  /** The same bytes as a gRPC frame, written as they are to every stream sent the response (grpc-framing.ts). */
  readonly [PRE_FRAMED]: Buffer;
}

/**
 * The state-of-the-world responses and their bytes. A push sends the same resources to every
 * stream subscribed to the same names (1,000 gRPC clients of one service get the same
 * ClusterLoadAssignment), and grpc-js would encode the response once per stream: sharing the
 * encoding took a push to 1,000 such streams from 198-246 to 127-150 ms of CPU (bench/xds.ts,
 * docs/xds.md). Within one push (`push`), responses of the same type and resource versions
 * are one response, encoded once, with one `version_info` and one `nonce` for every stream it
 * goes to.
 *
 * A nonce only has to tell a stream's responses apart (an ACK or NACK names the one it
 * answers), so every response takes the next number of one counter, shared or not: no stream
 * is ever sent two responses with the same nonce. `version_info` is that number too, the same
 * for every stream sent the response (what the client echoes as the version it holds). Outside
 * a push (the answer to a request) a response is built for its stream alone.
 */
export class ResponseEncoder {
  private counter = 0;
  private shared: Map<string, EncodedResponse> | null = null;

  constructor(private readonly encode: (response: DiscoveryResponse) => Buffer) {}

  /** Runs one push: the responses built during `run` are shared by resource versions. */
  push(run: () => void): void {
    this.shared = new Map();
    try {
      run();
    } finally {
      this.shared = null;
    }
  }

  /** The response sending `resources` (in this order) of the type `typeUrl`. */
  response(typeUrl: string, resources: readonly NamedResource[]): EncodedResponse {
    const { shared } = this;
    const key = shared === null ? '' : keyOf(typeUrl, resources);
    const found = shared?.get(key);
    if (found) return found;
    const id = (++this.counter).toString(36);
    const response: DiscoveryResponse = { version_info: id, resources: resources.map((resource) => resource.any), type_url: typeUrl, nonce: id };
    // One frame per response: its message is a view of it, never a second copy.
    const frame = frameOf(this.encode(response));
    const encoded: EncodedResponse = Object.assign(response, { [PRE_ENCODED]: frame.subarray(5), [PRE_FRAMED]: frame });
    shared?.set(key, encoded);
    return encoded;
  }
}

/** What makes two responses the same bytes (but for their ids): the type and each resource's name and version, in order. */
function keyOf(typeUrl: string, resources: readonly NamedResource[]): string {
  let key = typeUrl;
  for (const resource of resources) key += `\n${resource.version}\t${resource.name}`;
  return key;
}
