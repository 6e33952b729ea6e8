import { describe, expect, it } from 'vitest';
import { Turns, type TurnJob } from '../../../src/watch/turns.js';
import { FakeClock } from '../../support/fake-clock.js';

/** A job of `steps` steps of `unitsEach`; `log` gets its name per step done. */
function job(name: string, steps: number, unitsEach: number, log: string[]): TurnJob & { left: number } {
  return {
    left: steps,
    get nextUnits() {
      return unitsEach;
    },
    run(units) {
      let spent = 0;
      do {
        this.left -= 1;
        spent += unitsEach;
        log.push(name);
      } while (this.left > 0 && spent + unitsEach <= units);
      return spent;
    },
    get done() {
      return this.left === 0;
    },
  };
}

describe('Turns', () => {
  it('runs a job\'s first turn at once, then at most a turn\'s units per turn, round robin between jobs', async () => {
    const clock = new FakeClock();
    const log: string[] = [];
    // The fake clock runs the timers each turn sets within one advance: note each turn's steps.
    const perTurn: string[] = [];
    const schedule = clock.setTimeout.bind(clock);
    clock.setTimeout = (fn, delayMs) =>
      schedule(() => {
        const before = log.length;
        fn();
        perTurn.push(log.slice(before).join(''));
      }, delayMs);
    const turns = new Turns(clock, { turnUnits: 10, pieceUnits: 4 });
    turns.start(job('a', 30, 1, log));
    expect(log).toHaveLength(10);
    turns.start(job('b', 30, 1, log));
    expect(log).toHaveLength(20);
    expect([clock.pendingTimers, turns.queued]).toEqual([1, 2]);
    await clock.advance(0);
    // Pieces of 4, 4, then the 2 left of the turn; the next turn starts where this one ended.
    expect(perTurn.slice(0, 2)).toEqual(['aaaabbbbaa', 'bbbbaaaabb']);
    expect(perTurn.every((steps) => steps.length <= 10)).toBe(true);
    expect(log).toHaveLength(60);
    expect([clock.pendingTimers, turns.queued]).toEqual([0, 0]);
  });

  it('gives a step bigger than a turn a turn of its own', async () => {
    const clock = new FakeClock();
    const turns = new Turns(clock, { turnUnits: 10, pieceUnits: 10 });
    const log: string[] = [];
    turns.start(job('small', 3, 1, log));
    const big = job('big', 3, 25, log);
    turns.start(big);
    // Its first step runs in its caller's turn, whatever it costs.
    expect(log).toEqual(['small', 'small', 'small', 'big']);
    expect(big.left).toBe(2);
  });

  it('leaves no timer once the jobs waiting are cancelled, and runs none of them again', async () => {
    const clock = new FakeClock();
    const turns = new Turns(clock, { turnUnits: 10, pieceUnits: 4 });
    const log: string[] = [];
    const a = job('a', 100, 1, log);
    const b = job('b', 100, 1, log);
    turns.start(a);
    turns.start(b);
    turns.cancel(a);
    expect(clock.pendingTimers).toBe(1);
    turns.cancel(b);
    expect([clock.pendingTimers, turns.queued]).toEqual([0, 0]);
    const done = log.length;
    await clock.advance(1_000);
    expect(log).toHaveLength(done);
  });
});
