import { describe, expect, it } from 'vitest';
import { diffEntries } from '../../../src/replication/reconcile-parts.js';
import { record, stored } from '../../support/records.js';
import { formatVersion } from '../../../src/clock/hlc.js';

const entry = (instanceId: string, wallMs: number) => stored(record({ instanceId, wallMs }));
const v = (wallMs: number) => formatVersion({ wallMs, counter: 0, peerId: 'a' });
const key = (id: string) => `default/orders/${id}`;

describe('diffEntries', () => {
  it('sorts every key into newer here, newer there, or equal', () => {
    const local = [entry('same', 5), entry('mine-newer', 9), entry('theirs-newer', 3), entry('only-mine', 1)];
    const remote = [
      [key('same'), v(5), 0],
      [key('mine-newer'), v(8), 0],
      [key('theirs-newer'), v(4), 1],
      [key('only-theirs'), v(2), 0],
    ] as [string, string, 0 | 1][];
    const { newerHere, newerThere } = diffEntries(local, remote);
    expect(newerHere.map((e) => e.record.instanceId).sort()).toEqual(['mine-newer', 'only-mine']);
    expect(newerThere.sort()).toEqual([key('only-theirs'), key('theirs-newer')]);
  });

  it('finds nothing between equal sides', () => {
    const local = [entry('x', 1)];
    expect(diffEntries(local, [[key('x'), v(1), 0]])).toEqual({ newerHere: [], newerThere: [] });
  });
});
