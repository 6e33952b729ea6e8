import { describe, expect, it } from 'vitest';
import { FRAMED, OrderedWrites, oneATurn, type WritePacing } from '../../../src/xds/ordered-writes.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { ResponseEncoder, type EncodedResponse, type NamedResource } from '../../../src/xds/responses.js';

const protos = new XdsProtos();
const resource = (name: string, version: number): NamedResource => ({ name, version, any: { type_url: TYPE_URLS.endpoints, value: Buffer.from(`${name}@${version}`) } });
const many = (count: number) => Array.from({ length: count }, (_, i) => resource(`service-${i}`, 1));

/** Writes to `written` with `pacing`; a message `boom` throws. */
function writer<T>(pacing: WritePacing<T>) {
  const written: T[] = [];
  const failures: unknown[] = [];
  let closed = false;
  const writes = new OrderedWrites<T>(
    (message) => {
      if (message === 'boom') throw new Error('write failed');
      written.push(message);
    },
    pacing,
    (error) => failures.push(error),
    () => closed,
  );
  return { writes, written, failures, close: () => (closed = true) };
}

describe('OrderedWrites, state-of-the-world responses (FRAMED)', () => {
  /** An encoder framing 200 bytes a turn, its turns run by hand. */
  function framing() {
    const queued: (() => void)[] = [];
    const encoder = new ResponseEncoder((response) => protos.frameResponse(response), { writer: (response) => protos.responseWriter(response), bytesPerTurn: 200, later: (run) => queued.push(run) });
    const runTurns = () => {
      while (queued.length > 0) queued.shift()!();
    };
    return { encoder, runTurns };
  }

  it('writes a response framed at once at once', () => {
    const { encoder } = framing();
    const { writes, written } = writer(FRAMED);
    const small = encoder.response(TYPE_URLS.cluster, many(1));
    writes.send(small);
    expect(written).toEqual([small]);
    expect(writes.pending).toBe(0);
  });

  it('keeps the order responses were made in: one framed at once waits for a larger one made before it', () => {
    const { encoder, runTurns } = framing();
    const { writes, written } = writer(FRAMED);
    const large = encoder.response(TYPE_URLS.cluster, many(50));
    const small = encoder.response(TYPE_URLS.endpoints, many(1));
    writes.send(large);
    writes.send(small);
    expect(written).toEqual([]);
    expect(writes.pending).toBe(2);
    runTurns();
    expect(written).toEqual([large, small]);
    expect(writes.pending).toBe(0);
    const next = encoder.response(TYPE_URLS.endpoints, many(2));
    writes.send(next);
    expect(written.at(-1)).toBe(next);
  });

  it('writes nothing once its stream is closed, and ends the stream when a write throws', () => {
    const { encoder, runTurns } = framing();
    const closing = writer(FRAMED);
    closing.writes.send(encoder.response(TYPE_URLS.cluster, many(50)));
    closing.close();
    runTurns();
    expect(closing.written).toEqual([]);
    expect(closing.writes.pending).toBe(0);

    const thrown = new Error('stream gone');
    const failures: unknown[] = [];
    const writes = new OrderedWrites<EncodedResponse>(
      () => {
        throw thrown;
      },
      FRAMED,
      (error) => failures.push(error),
      () => false,
    );
    writes.send(encoder.response(TYPE_URLS.cluster, many(50)), encoder.response(TYPE_URLS.endpoints, many(1)));
    runTurns();
    expect(failures).toEqual([thrown]);
    expect(writes.pending).toBe(0);
  });
});

describe('OrderedWrites, the parts of an answer (oneATurn)', () => {
  function turnByTurn() {
    const turns: (() => void)[] = [];
    const { writes, written, failures, close } = writer<string>(oneATurn((run) => turns.push(run)));
    return { writes, written, failures, close, turns, turn: () => turns.shift()?.() };
  }

  it('writes the first message at once and every other one in a turn of its own, in order, with later sends after them', () => {
    const { writes, written, turns, turn } = turnByTurn();
    writes.send('a1', 'a2', 'a3');
    expect(written).toEqual(['a1']);
    writes.send('b1');
    expect(written).toEqual(['a1']);
    expect(turns).toHaveLength(1);
    turn();
    expect(written).toEqual(['a1', 'a2']);
    expect(turns).toHaveLength(1);
    turn();
    turn();
    expect(written).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(turns).toHaveLength(0);
    expect(writes.pending).toBe(0);
    writes.send('c1');
    expect(written.at(-1)).toBe('c1');
  });

  it('writes everything at once without a way to wait a turn', () => {
    const { writes, written } = writer<string>(oneATurn(undefined));
    writes.send('a1', 'a2', 'a3');
    expect(written).toEqual(['a1', 'a2', 'a3']);
  });

  it('drops what waits when the stream closes, and stops at a write that throws', () => {
    const closing = turnByTurn();
    closing.writes.send('a1', 'a2', 'a3');
    closing.close();
    closing.turn();
    expect(closing.written).toEqual(['a1']);
    expect(closing.writes.pending).toBe(0);

    const failing = turnByTurn();
    failing.writes.send('a1', 'boom', 'a3');
    failing.turn();
    expect(failing.written).toEqual(['a1']);
    expect(failing.failures).toEqual([new Error('write failed')]);
    expect(failing.writes.pending).toBe(0);
    expect(failing.turns).toHaveLength(0);
  });
});
