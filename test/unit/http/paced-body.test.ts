import { describe, expect, it } from 'vitest';
import { PacedBody, Pacer } from '../../../src/http/paced-body.js';

/** Lets the streams react: they ask for their next piece in a process tick after each push. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A pacer whose turns the test runs by hand. `step` runs one turn and records what it handed
 * out; `runAll` steps until no turn is scheduled; `turn` is the number of turns run so far.
 */
function steppedPacer(bytesPerTurn: number, pieceBytes: number) {
  const turns: (() => void)[] = [];
  const pacer = new Pacer({ bytesPerTurn, pieceBytes, schedule: (turn) => turns.push(turn) });
  const perTurn: number[] = [];
  let turn = 0;
  const step = async () => {
    turn += 1;
    turns.shift()?.();
    perTurn.push(pacer.lastTurnBytes);
    await settle();
  };
  const runAll = async (maxTurns = 1_000) => {
    for (let i = 0; i < maxTurns && turns.length > 0; i++) await step();
  };
  return { pacer, step, runAll, perTurn, turn: () => turn };
}

const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);

/** A flowing reader of `body` that records what arrived, and in which turn. */
function reader(body: PacedBody, turnOf: () => number = () => 0) {
  const pieces: { turn: number; piece: Buffer }[] = [];
  let ended = false;
  body.on('data', (piece: Buffer) => pieces.push({ turn: turnOf(), piece }));
  body.on('end', () => (ended = true));
  return { pieces, ended: () => ended, text: () => Buffer.concat(pieces.map((p) => p.piece)) };
}

describe('paced bodies', () => {
  it('send every chunk, in order and unchanged, in pieces no larger than the piece size', async () => {
    const { pacer, runAll, turn } = steppedPacer(1_000, 300);
    const chunks = [bytes(700, 1), bytes(10, 2), bytes(0, 3), bytes(300, 4)];
    const read = reader(new PacedBody(chunks, pacer), turn);
    await settle();
    await runAll(100);
    expect(read.ended()).toBe(true);
    expect(read.text().equals(Buffer.concat(chunks))).toBe(true);
    expect(Math.max(...read.pieces.map((p) => p.piece.length))).toBeLessThanOrEqual(300);
    // Pieces are views of the shared chunks, never copies.
    expect(read.pieces[0]!.piece.buffer).toBe(chunks[0]!.buffer);
  });

  it('hand out at most one turn budget (and one piece over it) per turn, across every body', async () => {
    const { pacer, runAll, perTurn, turn } = steppedPacer(1_000, 400);
    const reads = Array.from({ length: 6 }, (_, i) => reader(new PacedBody([bytes(2_000, i)], pacer), turn));
    await settle();
    await runAll(200);
    expect(reads.every((read) => read.ended())).toBe(true);
    reads.forEach((read, i) => expect(read.text().equals(bytes(2_000, i))).toBe(true));
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(1_000 + 400 - 1);
    expect(Math.max(...perTurn)).toBeGreaterThanOrEqual(1_000);
  });

  it('take turns: every body gets a piece before any body gets its second', async () => {
    const { pacer, runAll, turn } = steppedPacer(500, 100);
    const reads = Array.from({ length: 12 }, (_, i) => reader(new PacedBody([bytes(1_000, i)], pacer), turn));
    await settle();
    await runAll();
    const firstTurns = reads.map((read) => read.pieces[0]!.turn);
    const secondTurns = reads.map((read) => read.pieces[1]!.turn);
    expect(Math.max(...firstTurns)).toBeLessThanOrEqual(Math.min(...secondTurns));
    // 12 bodies at 5 pieces a turn: the first pieces take three turns.
    expect(new Set(firstTurns).size).toBe(3);
  });

  it('drops a body destroyed mid-way (a client that went away); the others finish', async () => {
    const { pacer, step, runAll } = steppedPacer(10_000, 100);
    const gone = new PacedBody([bytes(1_000, 1)], pacer);
    gone.on('error', () => {});
    const goneRead = reader(gone);
    const keptRead = reader(new PacedBody([bytes(1_000, 2)], pacer));
    await settle();
    await step();
    gone.destroy();
    await runAll();
    expect(keptRead.ended()).toBe(true);
    expect(keptRead.text().equals(bytes(1_000, 2))).toBe(true);
    expect(goneRead.pieces.length).toBeLessThan(10);
    expect(pacer.queued).toBe(0);
  });

  it('send nothing to a body whose reader is not reading (backpressure)', async () => {
    const { pacer, step, runAll } = steppedPacer(10_000, 100);
    const paused = new PacedBody([bytes(1_000, 1)], pacer);
    const pausedRead = reader(paused);
    reader(new PacedBody([bytes(1_000, 2)], pacer));
    await settle();
    await step();
    paused.pause();
    const before = pausedRead.pieces.length;
    await runAll();
    expect(pausedRead.pieces.length).toBe(before);
    paused.resume();
    await settle();
    await runAll();
    expect(pausedRead.text().equals(bytes(1_000, 1))).toBe(true);
  });

  it('gather runs of small chunks into pieces of at most the piece size when asked, and send big chunks as views', async () => {
    const { pacer, runAll, turn } = steppedPacer(10_000, 300);
    const small = Array.from({ length: 40 }, (_, i) => bytes(20, i));
    const big = bytes(700, 99);
    const chunks = [...small, big, ...small];
    const read = reader(new PacedBody(chunks, pacer, { gatherSmallChunks: true }), turn);
    await settle();
    await runAll(100);
    expect(read.ended()).toBe(true);
    expect(read.text().equals(Buffer.concat(chunks))).toBe(true);
    // 40 chunks of 20 bytes are three pieces (15 + 15 + 10 chunks), the big chunk two views and
    // its last 100 bytes gathered with the 10 chunks after it, then the last 30 chunks in two.
    expect(read.pieces.map((p) => p.piece.length)).toEqual([300, 300, 200, 300, 300, 300, 300, 300]);
    expect(read.pieces[3]!.piece.buffer).toBe(big.buffer);
    // One piece per turn for one body: gathered, 8 turns; each chunk alone (the default) is one turn per chunk.
    expect(new Set(read.pieces.map((p) => p.turn)).size).toBe(8);
    const { pacer: plainPacer, runAll: plainRunAll, turn: plainTurn } = steppedPacer(10_000, 300);
    const plain = reader(new PacedBody(chunks, plainPacer), plainTurn);
    await settle();
    await plainRunAll(1_000);
    expect(plain.text().equals(Buffer.concat(chunks))).toBe(true);
    expect(plain.pieces).toHaveLength(80 + 3);
  });
});
