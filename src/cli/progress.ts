/**
 * Progress of a long operation (a bulk load, waiting for a cluster), on standard error so that
 * standard output stays clean for `--json`. On a terminal one line is redrawn in place (at most
 * every 100 ms); elsewhere (a pipe, CI) a line is written at most every 2 s, plus the last one.
 */
export class Progress {
  private lastDrawMs = 0;
  private drawn = false;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly nowMs: () => number = Date.now,
  ) {}

  private get interactive(): boolean {
    return Boolean(this.stream.isTTY);
  }

  /** Shows `text` now if enough time passed since the last line (or `force`). */
  update(text: string, force = false): void {
    const now = this.nowMs();
    if (!force && now - this.lastDrawMs < (this.interactive ? 100 : 2_000)) return;
    this.lastDrawMs = now;
    if (this.interactive) {
      this.stream.write(`\r\x1b[2K${text}`);
      this.drawn = true;
    } else {
      this.stream.write(`${text}\n`);
    }
  }

  /** Writes the final line and leaves the cursor on a fresh line. */
  done(text: string): void {
    if (this.interactive) this.stream.write(`\r\x1b[2K${text}\n`);
    else this.stream.write(`${text}\n`);
    this.drawn = false;
  }

  /** Clears a line drawn in place (before printing something else). */
  clear(): void {
    if (this.interactive && this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}

/** `[#########.........] 45% 4500/10000` */
export function bar(done: number, total: number, width = 24): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total}`;
}
