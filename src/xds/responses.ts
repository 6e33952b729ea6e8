import type { VersionedResource } from './catalog.js';
import { PRE_FRAMED } from './grpc-framing.js';
import { PRE_ENCODED, type AnyMessage } from './protos.js';
import type { DiscoveryResponse } from './stream.js';

/** Where a response written in turns keeps its writing (absent on a response framed at once). */
const FRAMING = Symbol('xds.framing');

/** A response's frame written a bounded amount at a time (wire.ts DiscoveryResponseWriter). */
export interface FrameWriter {
  /** The frame; whole once `write` answered true. */
  readonly bytes: Buffer;
  /** Writes up to about `maxBytes` more; true once the frame is whole. */
  write(maxBytes: number): boolean;
}

/**
 * How large responses are framed: `bytesPerTurn` of a frame a turn of the event loop, the next
 * turn asked of `later` (the clock's `setTimeout(0)`).
 */
export interface FramingInTurns {
  writer(response: DiscoveryResponse): FrameWriter;
  bytesPerTurn: number;
  later(run: () => void): void;
}

/**
 * Frame bytes written a turn: a copy of 4 MB (and the page faults of a fresh buffer) takes a few
 * ms, where a wildcard response of every Cluster of 200,000 services (42 MB) or every endpoint
 * of 1,000,000 instances (45 MB) took 60-120 ms in one piece (bench/xds-wildcard.ts).
 */
export const FRAME_BYTES_PER_TURN = 4 * 1024 * 1024;

/** A resource of a response: its name and version say which bytes it is. */
export interface NamedResource extends VersionedResource {
  name: string;
}

/** A response that carries its bytes: the ADS service sends them as they are (protos.ts). */
export interface EncodedResponse extends DiscoveryResponse {
  readonly [PRE_ENCODED]: Buffer;
  /** The same bytes as a gRPC frame, written as they are to every stream sent the response (grpc-framing.ts). */
  readonly [PRE_FRAMED]: Buffer;
  /** A response still being written (in turns): its bytes are whole once it is done (`whenFramed`). */
  readonly [FRAMING]?: Framing;
}

/** A response framed in turns: who waits for it. */
interface Framing {
  done: boolean;
  error?: unknown;
  readonly waiting: ((error?: unknown) => void)[];
}

/**
 * Runs `then` once `response`'s bytes are whole: at once for a response framed at once, in
 * the turn its last bytes are written otherwise, with the error when writing them failed.
 */
export function whenFramed(response: EncodedResponse, then: (error?: unknown) => void): void {
  const framing = response[FRAMING];
  if (framing === undefined || framing.done) then(framing?.error);
  else framing.waiting.push(then);
}

/** Whether `response`'s bytes are whole now (it can be written at once). */
export function isFramed(response: EncodedResponse): boolean {
  const framing = response[FRAMING];
  return framing === undefined || (framing.done && framing.error === undefined);
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
  /**
   * The response last asked for in this push, with what it sends: a push asks for the same
   * response stream after stream (1,000 streams of one service in a row), and comparing the
   * resources with the last ones found it without building the key (a string per stream).
   */
  private last: { typeUrl: string; resources: readonly NamedResource[]; response: EncodedResponse } | null = null;
  private readonly anys = new WeakMap<readonly NamedResource[], AnyMessage[]>();

  /**
   * `frame`: the gRPC frame of a response (its bytes after grpc-framing.ts's 5-byte header).
   * With `inTurns`, a response whose frame is more than `bytesPerTurn` is written over several
   * turns instead: it is returned at once, and its bytes are whole later (`whenFramed`).
   */
  constructor(
    private readonly frame: (response: DiscoveryResponse) => Buffer,
    private readonly inTurns?: FramingInTurns,
  ) {}

  /** Runs one push: the responses built during `run` are shared by resource versions. */
  push(run: () => void): void {
    this.shared = new Map();
    try {
      run();
    } finally {
      this.shared = null;
      this.last = null;
    }
  }

  /** The response sending `resources` (in this order) of the type `typeUrl`. */
  response(typeUrl: string, resources: readonly NamedResource[]): EncodedResponse {
    const { shared, last } = this;
    if (shared !== null && last !== null && last.typeUrl === typeUrl && sameResources(last.resources, resources)) return last.response;
    const key = shared === null ? '' : keyOf(typeUrl, resources);
    const found = shared?.get(key);
    if (found) {
      this.last = { typeUrl, resources, response: found };
      return found;
    }
    const id = (++this.counter).toString(36);
    const response: DiscoveryResponse = { version_info: id, resources: this.anysOf(resources), type_url: typeUrl, nonce: id };
    const encoded = this.inTurns === undefined ? framed(response, this.frame(response)) : this.frameInTurns(response, this.inTurns);
    if (shared !== null) {
      shared.set(key, encoded);
      this.last = { typeUrl, resources, response: encoded };
    }
    return encoded;
  }

  /**
   * The resources' messages: made once per list (a wildcard set's whole list is one list for
   * every stream, and its first answers carry it: 200,000 names mapped per stream before).
   */
  private anysOf(resources: readonly NamedResource[]): AnyMessage[] {
    let anys = this.anys.get(resources);
    if (anys === undefined) this.anys.set(resources, (anys = resources.map((resource) => resource.any)));
    return anys;
  }

  /** Frames `response`: in this turn when it fits one, else `bytesPerTurn` a turn from the next on. */
  private frameInTurns(response: DiscoveryResponse, inTurns: FramingInTurns): EncodedResponse {
    const writer = inTurns.writer(response);
    if (writer.write(inTurns.bytesPerTurn)) return framed(response, writer.bytes);
    const framing: Framing = { done: false, waiting: [] };
    // Its bytes are set once whole: nothing writes a response before (ordered-writes.ts waits for `whenFramed`).
    const encoded = Object.assign(response, { [FRAMING]: framing }) as EncodedResponse;
    const finish = (error?: unknown) => {
      if (error === undefined) framed(encoded, writer.bytes);
      framing.done = true;
      framing.error = error;
      for (const then of framing.waiting.splice(0)) then(error);
    };
    const step = () => {
      let whole: boolean;
      try {
        whole = writer.write(inTurns.bytesPerTurn);
      } catch (error) {
        finish(error);
        return;
      }
      if (whole) finish();
      else inTurns.later(step);
    };
    inTurns.later(step);
    return encoded;
  }
}

/** The response with its frame: its message is a view of the frame, never a second copy. */
function framed(response: DiscoveryResponse, frame: Buffer): EncodedResponse {
  return Object.assign(response, { [PRE_ENCODED]: frame.subarray(5), [PRE_FRAMED]: frame });
}

/** Whether two resource lists are the same names at the same versions, in the same order (what `keyOf` keys). */
function sameResources(a: readonly NamedResource[], b: readonly NamedResource[]): boolean {
  // One list for every stream sent a wildcard set's Clusters (stream.ts `wholeList`): 200,000 names not compared again.
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i]!.name !== b[i]!.name || a[i]!.version !== b[i]!.version) return false;
  return true;
}

/** What makes two responses the same bytes (but for their ids): the type and each resource's name and version, in order. */
function keyOf(typeUrl: string, resources: readonly NamedResource[]): string {
  let key = typeUrl;
  for (const resource of resources) key += `\n${resource.version}\t${resource.name}`;
  return key;
}
