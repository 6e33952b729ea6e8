import { describe, expect, it } from 'vitest';
import { diffServed, replayObservations, type Observation, type ServedInstance, type ServedState } from '../../../chaos/history.js';

const up = (version: string): ServedInstance => ({ version, status: 'UP', held: false });

describe('chaos observations', () => {
  it('store only what changed between two polls', () => {
    const before = new Map([['s/a', up('1')], ['s/b', up('1')], ['s/c', up('1')]]);
    const after = new Map([['s/a', up('1')], ['s/b', up('2')], ['s/d', up('1')]]);
    expect(diffServed(before, after)).toEqual({ 's/b': up('2'), 's/d': up('1'), 's/c': null });
    expect(diffServed(after, after)).toEqual({});
    expect(diffServed(before, new Map([...before, ['s/a', { ...up('1'), held: true }]]))).toEqual({ 's/a': { ...up('1'), held: true } });
  });

  it('replay each peer incarnation on its own, in order, naming what vanished', () => {
    const observations: Observation[] = [
      { peer: 'p', incarnation: 1, round: 2, sentAtMs: 20, doneAtMs: 21, changes: { 's/a': null } },
      { peer: 'p', incarnation: 1, round: 1, sentAtMs: 10, doneAtMs: 11, changes: { 's/a': up('1'), 's/b': up('1') } },
      { peer: 'p', incarnation: 2, round: 3, sentAtMs: 30, doneAtMs: 31, changes: { 's/b': up('1') } },
      { peer: 'p', incarnation: 2, round: 4, sentAtMs: 40, doneAtMs: 41, changes: { 's/c': null } },
    ];
    const states: { at: number; served: string[]; vanished: string[] }[] = [];
    replayObservations(observations, (state: ServedState) => {
      states.push({ at: state.observation.sentAtMs, served: [...state.served.keys()].sort(), vanished: state.vanished.map((v) => `${v.key}@${v.previous.sentAtMs}`) });
    });
    expect(states).toEqual([
      { at: 10, served: ['s/a', 's/b'], vanished: [] },
      { at: 20, served: ['s/b'], vanished: ['s/a@10'] },
      { at: 30, served: ['s/b'], vanished: [] },
      // A key the incarnation never served cannot vanish from it.
      { at: 40, served: ['s/b'], vanished: [] },
    ]);
  });
});
