import { isFramed, whenFramed, type EncodedResponse } from './responses.js';

/**
 * A state-of-the-world stream's responses in the order they were made. A large response is
 * framed over several turns (responses.ts), and a later one (a small push of another type)
 * may be framed first: it waits, so that a client always gets them in the order the stream
 * made them (a Cluster before the endpoints of it, an older response never after a newer one).
 * A response framed at once, with none waiting before it, is written at once, as before.
 */
export class ResponseOutbox {
  private readonly waiting: EncodedResponse[] = [];

  constructor(
    private readonly write: (response: EncodedResponse) => void,
    /** Told when a response could not be framed, or writing one threw: the stream ends. */
    private readonly failed: (error: unknown) => void,
    private readonly closed: () => boolean,
  ) {}

  /** Responses made and not yet written (framed in turns, or behind one that is). */
  get pending(): number {
    return this.waiting.length;
  }

  send(response: EncodedResponse): void {
    if (this.waiting.length === 0 && isFramed(response)) {
      this.write(response);
      return;
    }
    this.waiting.push(response);
    if (this.waiting.length === 1) this.flushWhenFramed();
  }

  private flushWhenFramed(): void {
    whenFramed(this.waiting[0]!, (error) => {
      if (this.closed()) {
        this.waiting.length = 0;
        return;
      }
      if (error !== undefined) {
        this.waiting.length = 0;
        this.failed(error);
        return;
      }
      try {
        this.write(this.waiting.shift()!);
      } catch (thrown) {
        this.waiting.length = 0;
        this.failed(thrown);
        return;
      }
      if (this.waiting.length > 0) this.flushWhenFramed();
    });
  }
}
