import { describe, expect, it } from 'vitest';
import { ResponseOutbox } from '../../../src/xds/outbox.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { ResponseEncoder, type EncodedResponse, type NamedResource } from '../../../src/xds/responses.js';

const protos = new XdsProtos();
const resource = (name: string, version: number): NamedResource => ({ name, version, any: { type_url: TYPE_URLS.endpoints, value: Buffer.from(`${name}@${version}`) } });
const many = (count: number) => Array.from({ length: count }, (_, i) => resource(`service-${i}`, 1));

/** An encoder framing 200 bytes a turn, its turns run by hand, and an outbox writing to `written`. */
function setUp() {
  const queued: (() => void)[] = [];
  const encoder = new ResponseEncoder((response) => protos.frameResponse(response), { writer: (response) => protos.responseWriter(response), bytesPerTurn: 200, later: (run) => queued.push(run) });
  const written: EncodedResponse[] = [];
  const failures: unknown[] = [];
  let closed = false;
  const outbox = new ResponseOutbox(
    (response) => written.push(response),
    (error) => failures.push(error),
    () => closed,
  );
  const runTurns = () => {
    while (queued.length > 0) queued.shift()!();
  };
  return { encoder, outbox, written, failures, runTurns, close: () => (closed = true) };
}

describe('ResponseOutbox', () => {
  it('writes a response framed at once at once', () => {
    const { encoder, outbox, written } = setUp();
    const small = encoder.response(TYPE_URLS.cluster, many(1));
    outbox.send(small);
    expect(written).toEqual([small]);
    expect(outbox.pending).toBe(0);
  });

  it('keeps the order responses were made in: one framed at once waits for a larger one made before it', () => {
    const { encoder, outbox, written, runTurns } = setUp();
    const large = encoder.response(TYPE_URLS.cluster, many(50));
    const small = encoder.response(TYPE_URLS.endpoints, many(1));
    outbox.send(large);
    outbox.send(small);
    expect(written).toEqual([]);
    expect(outbox.pending).toBe(2);
    runTurns();
    expect(written).toEqual([large, small]);
    expect(outbox.pending).toBe(0);
    // Nothing waits now: the next small one goes at once.
    const next = encoder.response(TYPE_URLS.endpoints, many(2));
    outbox.send(next);
    expect(written.at(-1)).toBe(next);
  });

  it('writes nothing once its stream is closed, and ends the stream when a frame could not be written', () => {
    const closing = setUp();
    closing.outbox.send(closing.encoder.response(TYPE_URLS.cluster, many(50)));
    closing.close();
    closing.runTurns();
    expect(closing.written).toEqual([]);
    expect(closing.outbox.pending).toBe(0);

    const failing = setUp();
    const thrown = new Error('stream gone');
    const outbox = new ResponseOutbox(
      () => {
        throw thrown;
      },
      (error) => failing.failures.push(error),
      () => false,
    );
    outbox.send(failing.encoder.response(TYPE_URLS.cluster, many(50)));
    outbox.send(failing.encoder.response(TYPE_URLS.endpoints, many(1)));
    failing.runTurns();
    expect(failing.failures).toEqual([thrown]);
    expect(outbox.pending).toBe(0);
  });
});
