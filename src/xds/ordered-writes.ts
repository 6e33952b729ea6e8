import { isFramed, whenFramed, type EncodedResponse } from './responses.js';

/** When a stream's next message may be written. */
export interface WritePacing<T> {
  /** Whether `message` may be written now, `written` messages having been written in this turn already. */
  readyNow(message: T, written: number): boolean;
  /** Runs `then` once `message` may be written (with the error when it never can be). */
  whenReady(message: T, then: (error?: unknown) => void): void;
}

/**
 * A stream's messages, written in the order they were made. A message that may not be written
 * yet (a large response still being framed, or the next part of an answer split in parts)
 * waits, and every message made after it waits behind it: a client always gets them in the
 * order the stream made them (a Cluster before its endpoints, an older response never after a
 * newer one). With nothing waiting, a message that is ready is written at once.
 */
export class OrderedWrites<T> {
  private readonly queue: T[] = [];
  private waiting = false;

  constructor(
    private readonly write: (message: T) => void,
    private readonly pacing: WritePacing<T>,
    /** Told when a message can never be written, or writing one threw: nothing more is written (the stream ends). */
    private readonly failed: (error: unknown) => void,
    private readonly closed: () => boolean,
  ) {}

  /** Messages made and not written yet. */
  get pending(): number {
    return this.queue.length;
  }

  /** Writes `messages` after those waiting, each once it may be. */
  send(...messages: T[]): void {
    for (const message of messages) this.queue.push(message);
    if (!this.waiting) this.drain();
  }

  /** Writes what may be written now (`written` were in this turn already), then waits for the next message to be ready. */
  private drain(written = 0): void {
    while (this.queue.length > 0) {
      if (this.closed()) {
        this.queue.length = 0;
        return;
      }
      const next = this.queue[0]!;
      if (!this.pacing.readyNow(next, written)) {
        this.waiting = true;
        this.pacing.whenReady(next, (error) => {
          this.waiting = false;
          if (error === undefined) {
            if (this.writeFirst()) this.drain(1);
            return;
          }
          this.queue.length = 0;
          this.failed(error);
        });
        return;
      }
      if (!this.writeFirst()) return;
      written += 1;
    }
  }

  /** Writes the first message; false (and nothing waits any more) when the stream closed or the write threw. */
  private writeFirst(): boolean {
    if (this.closed()) {
      this.queue.length = 0;
      return false;
    }
    try {
      this.write(this.queue.shift()!);
      return true;
    } catch (error) {
      this.queue.length = 0;
      this.failed(error);
      return false;
    }
  }
}

/** State-of-the-world responses: each may be written once its frame is whole (responses.ts frames a large one in turns). */
export const FRAMED: WritePacing<EncodedResponse> = {
  readyNow: (response) => isFramed(response),
  whenReady: (response, then) => whenFramed(response, then),
};

/**
 * The parts of an incremental answer: one a turn (`later`: the clock's `setTimeout(0)`), each
 * encoded by grpc-js in the turn it is written; with no `later`, every one at once.
 */
export function oneATurn<T>(later: ((run: () => void) => void) | undefined): WritePacing<T> {
  return {
    readyNow: (_message, written) => later === undefined || written === 0,
    whenReady: (_message, then) => later!(() => then()),
  };
}
