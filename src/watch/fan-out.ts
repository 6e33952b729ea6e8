import type { Clock, TimerHandle } from '../clock/clock.js';

/**
 * Subscribers a frame is written to per turn of the event loop. Writing one frame to 5,000
 * sockets holds the loop for a hundred milliseconds or more; in slices of this many a
 * heartbeat (or any other request) waits at most one slice.
 */
export const FAN_OUT_SLICE = 256;

/** One frame on its way to the subscribers it was made for. */
interface Job<S, F> {
  /** What the frame is of (a service key): `sending` answers by it. */
  key: string;
  frame: F;
  subscribers: S[];
  next: number;
  /** When the job's first slice went out, and what to tell once its last one has. */
  startedMs: number;
  done?: (startedMs: number, endedMs: number) => void;
}

/**
 * Writes frames to their subscribers in slices of FAN_OUT_SLICE, yielding to the event loop
 * (a zero-delay timer on the injected clock) between slices. Frames go out in the order they
 * were sent, each to the whole list it was sent to before the next starts, so a subscriber
 * hears the frames of its channel in order. A frame for at most one slice, with nothing queued
 * ahead of it, goes out at once, in the caller's turn.
 */
export class FanOut<S, F> {
  private readonly queue: Job<S, F>[] = [];
  private timer: TimerHandle | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly deliver: (subscriber: S, frame: F) => void,
  ) {}

  /** Whether a frame of `key` is still queued or part-way out. */
  sending(key: string): boolean {
    return this.queue.some((job) => job.key === key);
  }

  /** Sends `frame` (of `key`) to `subscribers`; `done` is told when the last of them has it. */
  send(key: string, frame: F, subscribers: S[], done?: (startedMs: number, endedMs: number) => void): void {
    this.queue.push({ key, frame, subscribers, next: 0, startedMs: this.clock.nowMs(), done });
    if (this.timer === undefined) this.pump();
  }

  /** Drops what is queued (shutdown). */
  clear(): void {
    this.queue.length = 0;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private pump(): void {
    this.timer = undefined;
    let budget = FAN_OUT_SLICE;
    while (budget > 0 && this.queue.length > 0) {
      const job = this.queue[0]!;
      while (budget > 0 && job.next < job.subscribers.length) {
        this.deliver(job.subscribers[job.next++]!, job.frame);
        budget -= 1;
      }
      if (job.next < job.subscribers.length) break;
      this.queue.shift();
      job.done?.(job.startedMs, this.clock.nowMs());
    }
    if (this.queue.length > 0) this.timer = this.clock.setTimeout(() => this.pump(), 0);
  }
}
