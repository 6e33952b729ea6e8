/** A line of a streamed answer longer than its cap: the stream is refused, not buffered further. */
export class LineTooLongError extends Error {
  constructor(readonly maxLineBytes: number) {
    super(`a line of the stream is longer than ${maxLineBytes} bytes`);
    this.name = 'LineTooLongError';
  }
}

/** One line of a stream: its text (UTF-8, without the newline) and its bytes on the wire (newline included). */
export interface StreamLine {
  text: string;
  bytes: number;
}

/**
 * Splits a byte stream into newline-ended lines (NDJSON), holding at most one partial line
 * (`maxLineBytes`; a longer one throws `LineTooLongError` as soon as it is seen, before more of
 * it is kept). A last line without its newline is yielded as well. Pulls the next chunk only
 * when the caller asks for the next line, which keeps the source's backpressure.
 */
export async function* splitLines(chunks: AsyncIterable<Buffer | string>, maxLineBytes: number): AsyncGenerator<StreamLine> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const raw of chunks) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline !== -1; newline = chunk.indexOf(10, start)) {
      const bytes = pendingBytes + newline - start;
      if (bytes > maxLineBytes) throw new LineTooLongError(maxLineBytes);
      const piece = chunk.subarray(start, newline);
      const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece], bytes);
      pending = [];
      pendingBytes = 0;
      start = newline + 1;
      yield { text: line.toString('utf8'), bytes: bytes + 1 };
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxLineBytes) throw new LineTooLongError(maxLineBytes);
      pending.push(chunk.subarray(start));
    }
  }
  if (pendingBytes > 0) yield { text: Buffer.concat(pending, pendingBytes).toString('utf8'), bytes: pendingBytes };
}
