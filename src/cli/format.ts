/** Output for people: aligned tables, short durations and ages. Scripts use `--json` instead. */

/** Lays rows out in columns under upper-case headers, two spaces apart. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers.map((header) => header.toUpperCase()), ...rows.map((row) => row.map(String))];
  // A loop, not Math.max(...): a listing may have more rows than a call takes arguments (about 125,000).
  const widths = headers.map((_, column) => cells.reduce((widest, row) => Math.max(widest, (row[column] ?? '').length), 0));
  return cells
    .map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd())
    .join('\n');
}

export { ago, duration, metadataText } from '../ui/words.js';

/** A local wall-clock time, `HH:MM:SS`. */
export function clockTime(atMs: number): string {
  return new Date(atMs).toTimeString().slice(0, 8);
}

/** One line on standard output. */
export function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** A value as indented JSON on standard output (`--json`). */
export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}
