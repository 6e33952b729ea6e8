import { describe, expect, it } from 'vitest';
import { Outbox, type OutboxBatch } from '../../../src/replication/outbox.js';

/** An item as the channel queues them: one object per write (a stored entry), named here by its id. */
interface Item {
  id: string;
}
const item = (id: string): Item => ({ id });
const ids = (batch: OutboxBatch<Item>) => batch.items.map((queued) => queued.id);
const always = () => true;

describe('Outbox', () => {
  it('keeps items in arrival order and takes batches from the front, with when each was queued', () => {
    const outbox = new Outbox<Item>(10);
    for (const [id, atMs] of [['a', 10], ['b', 20], ['c', 30]] as const) outbox.add(item(id), atMs);
    const batch = outbox.take(2, always);
    expect(ids(batch)).toEqual(['a', 'b']);
    expect(batch.queuedAtMs).toEqual([10, 20]);
    expect(outbox.size).toBe(1);
  });

  it('passes over the items `keep` refuses (a key written again goes once, as last written), filling the batch from behind them', () => {
    const outbox = new Outbox<Item>(10);
    const stale = new Set<Item>();
    const a1 = item('a1');
    outbox.add(a1, 1);
    outbox.add(item('b'), 2);
    outbox.add(item('a2'), 3);
    stale.add(a1);
    outbox.add(item('c'), 4);
    expect(outbox.size).toBe(4);
    expect(ids(outbox.take(3, (queued) => !stale.has(queued)))).toEqual(['b', 'a2', 'c']);
    expect(outbox.size).toBe(0);
  });

  it('drops the oldest items when full, and counts them', () => {
    const outbox = new Outbox<Item>(3);
    for (const id of ['a', 'b', 'c', 'd', 'e']) outbox.add(item(id), 0);
    expect(outbox.dropped).toBe(2);
    expect(ids(outbox.take(10, always))).toEqual(['c', 'd', 'e']);
  });

  it('grows past its first room and wraps around, keeping the order and the times', () => {
    const outbox = new Outbox<Item>(100_000);
    const expected: string[] = [];
    let taken: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      outbox.add(item(String(i)), i);
      expected.push(String(i));
      // Drain a little now and then, so that the line wraps around the ring before it grows.
      if (i % 7 === 0) taken = taken.concat(ids(outbox.take(3, always)));
    }
    const rest = outbox.take(100_000, always);
    expect(taken.concat(ids(rest))).toEqual(expected);
    expect(rest.queuedAtMs).toEqual(rest.items.map((queued) => Number(queued.id)));
    expect(outbox.size).toBe(0);
    outbox.add(item('again'), 5);
    expect(ids(outbox.take(10, always))).toEqual(['again']);
  });

  it('goes on in order after a backlog far past its first room drains (its arrays made small again)', () => {
    const outbox = new Outbox<Item>(100_000);
    for (let i = 0; i < 40_000; i++) outbox.add(item(String(i)), i);
    expect(outbox.take(100_000, always).items).toHaveLength(40_000);
    for (const [id, atMs] of [['a', 1], ['b', 2]] as const) outbox.add(item(id), atMs);
    const batch = outbox.take(10, always);
    expect(ids(batch)).toEqual(['a', 'b']);
    expect(batch.queuedAtMs).toEqual([1, 2]);
  });

  it('stays within its bound when the bound is not a power of two', () => {
    const outbox = new Outbox<Item>(300);
    for (let i = 0; i < 1_000; i++) outbox.add(item(String(i)), i);
    expect(outbox.size).toBe(300);
    expect(outbox.dropped).toBe(700);
    const batch = outbox.take(1_000, always);
    expect(batch.items[0]!.id).toBe('700');
    expect(batch.items.at(-1)!.id).toBe('999');
  });

  it('puts a failed batch back at the back of the line with its queue times, except what `keep` refuses', () => {
    const outbox = new Outbox<Item>(10);
    const [a, b, c] = [item('a'), item('b'), item('c')];
    outbox.add(a, 1);
    outbox.add(b, 2);
    const batch = outbox.take(2, always);
    outbox.add(c, 7);
    outbox.restore(batch, (queued) => queued !== b);
    const again = outbox.take(10, always);
    expect(ids(again)).toEqual(['c', 'a']);
    expect(again.queuedAtMs).toEqual([7, 1]);
  });

  it('reports the age of the oldest pending write', () => {
    const outbox = new Outbox<Item>(10);
    expect(outbox.oldestAgeMs(100)).toBe(0);
    outbox.add(item('a'), 40);
    outbox.add(item('b'), 90);
    expect(outbox.oldestAgeMs(100)).toBe(60);
    outbox.take(1, always);
    expect(outbox.oldestAgeMs(100)).toBe(10);
  });
});
