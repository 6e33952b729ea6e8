import type { Clock, TimerHandle } from '../../src/clock/clock.js';

interface Timer {
  atMs: number;
  seq: number;
  fn: () => void;
  periodMs: number | null;
  cancelled: boolean;
}

/** Lets every promise chain that is ready run to completion (no real time passes). */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Virtual time: `nowMs()` only moves when a test calls `advance`, and timers fire in time
 * order (ties in creation order). Between two timers every ready promise settles, so async
 * code (replication, probes) runs as it would, without a single real sleep.
 */
export class FakeClock implements Clock {
  private currentMs: number;
  private seq = 0;
  private readonly heap: Timer[] = [];

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.currentMs = startMs;
  }

  nowMs(): number {
    return this.currentMs;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    return this.schedule(fn, Math.max(0, delayMs), null);
  }

  setInterval(fn: () => void, periodMs: number): TimerHandle {
    return this.schedule(fn, Math.max(1, periodMs), Math.max(1, periodMs));
  }

  /** Timers still waiting. */
  get pendingTimers(): number {
    return this.heap.filter((timer) => !timer.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const targetMs = this.currentMs + ms;
    await settle();
    for (;;) {
      const next = this.heap[0];
      if (!next || next.atMs > targetMs) break;
      this.pop();
      if (next.cancelled) continue;
      this.currentMs = Math.max(this.currentMs, next.atMs);
      if (next.periodMs !== null) {
        next.atMs += next.periodMs;
        next.seq = this.seq++;
        this.push(next);
      }
      next.fn();
      await settle();
    }
    // A jump made meanwhile (by a timer or a listener: time a synchronous piece of work took) stays.
    this.currentMs = Math.max(this.currentMs, targetMs);
    await settle();
  }

  /** Advances in `stepMs` steps until `predicate()` holds; fails after `maxMs` of virtual time. */
  async advanceUntil(predicate: () => boolean, maxMs: number, stepMs = 10): Promise<number> {
    const startMs = this.currentMs;
    await settle();
    while (!predicate()) {
      if (this.currentMs - startMs >= maxMs) throw new Error(`condition not met within ${maxMs} ms of virtual time`);
      await this.advance(stepMs);
    }
    return this.currentMs - startMs;
  }

  /** Jumps the wall clock (a clock step, as NTP may do) without firing timers in between. */
  jump(ms: number): void {
    this.currentMs += ms;
  }

  private schedule(fn: () => void, delayMs: number, periodMs: number | null): TimerHandle {
    const timer: Timer = { atMs: this.currentMs + delayMs, seq: this.seq++, fn, periodMs, cancelled: false };
    this.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  private less(a: Timer, b: Timer): boolean {
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
  }

  private push(timer: Timer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (!last || heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && this.less(heap[left]!, heap[smallest]!)) smallest = left;
      if (right < heap.length && this.less(heap[right]!, heap[smallest]!)) smallest = right;
      if (smallest === i) break;
      [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
      i = smallest;
    }
  }
}
