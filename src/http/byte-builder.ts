/**
 * Text appended as UTF-8 into one reused scratch buffer, taken out as exact-size buffers.
 * Building a slice of a big document as a string and then `Buffer.from` it flattens the
 * concatenated string before encoding it, and the slice's text is one long string more to
 * collect; encoding each piece straight into the scratch buffer skips both
 * (`npx tsx bench/eureka-instance-json.ts` measures it with the Eureka writer, against the
 * object route and `Buffer.from`).
 */
export class ByteBuilder {
  private scratch: Buffer;
  private used = 0;

  /** Small by default: one builder per Eureka application, and most applications are a few instances; it doubles as needed. */
  constructor(initialBytes = 2 * 1024) {
    // Not from Node's shared pool (`allocUnsafe` takes buffers under 4 KB from 8 KB slabs):
    // a dead scratch buffer there would sit between the kept slices of a full fetch and keep
    // its slab alive with them.
    this.scratch = Buffer.allocUnsafeSlow(initialBytes);
  }

  append(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair, 2 units, takes 4).
    const most = this.used + text.length * 3;
    if (most > this.scratch.length) this.grow(most);
    this.used += this.scratch.write(text, this.used);
  }

  /** What was appended since the last `take`, in a buffer of its own; the builder is empty again. */
  take(): Buffer {
    const out = Buffer.allocUnsafe(this.used);
    this.scratch.copy(out, 0, 0, this.used);
    this.used = 0;
    return out;
  }

  private grow(atLeast: number): void {
    const bigger = Buffer.allocUnsafeSlow(Math.max(atLeast, this.scratch.length * 2));
    this.scratch.copy(bigger, 0, 0, this.used);
    this.scratch = bigger;
  }
}
