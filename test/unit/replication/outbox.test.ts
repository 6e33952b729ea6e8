import { describe, expect, it } from 'vitest';
import { Outbox } from '../../../src/replication/outbox.js';

const key = (instanceId: string) => ({ namespace: 'default', service: 'orders', instanceId });
const ids = (items: { key: { instanceId: string } }[]) => items.map((item) => item.key.instanceId);

describe('Outbox', () => {
  it('keeps one entry per key: a newer write replaces a pending older one', () => {
    const outbox = new Outbox(10);
    outbox.add(key('a'), 1);
    outbox.add(key('b'), 2);
    outbox.add(key('a'), 3);
    expect(outbox.size).toBe(2);
    expect(ids(outbox.take(10))).toEqual(['b', 'a']);
  });

  it('drops the oldest keys when full, and counts them', () => {
    const outbox = new Outbox(3);
    for (const id of ['a', 'b', 'c', 'd', 'e']) outbox.add(key(id), 0);
    expect(outbox.dropped).toBe(2);
    expect(ids(outbox.take(10))).toEqual(['c', 'd', 'e']);
  });

  it('takes batches from the front', () => {
    const outbox = new Outbox(10);
    for (const id of ['a', 'b', 'c']) outbox.add(key(id), 0);
    expect(ids(outbox.take(2))).toEqual(['a', 'b']);
    expect(outbox.size).toBe(1);
  });

  it('puts a failed batch back unless a newer write queued the key again', () => {
    const outbox = new Outbox(10);
    outbox.add(key('a'), 1);
    outbox.add(key('b'), 2);
    const batch = outbox.take(2);
    outbox.add(key('a'), 5);
    outbox.restore(batch);
    const items = outbox.take(10);
    expect(ids(items)).toEqual(['a', 'b']);
    expect(items[0]!.queuedAtMs).toBe(5);
  });

  it('reports the age of the oldest pending write', () => {
    const outbox = new Outbox(10);
    expect(outbox.oldestAgeMs(100)).toBe(0);
    outbox.add(key('a'), 40);
    outbox.add(key('b'), 90);
    expect(outbox.oldestAgeMs(100)).toBe(60);
  });
});
