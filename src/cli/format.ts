/** Output for people: aligned tables, short durations and ages. Scripts use `--json` instead. */

/** Lays rows out in columns under upper-case headers, two spaces apart. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers.map((header) => header.toUpperCase()), ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells
    .map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd())
    .join('\n');
}

/** `850ms`, `12.5s`, `4m10s`, `3h05m`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)}ms`;
  if (abs < 60_000) return `${(ms / 1_000).toFixed(abs < 10_000 ? 1 : 0)}s`;
  const totalS = Math.round(ms / 1_000);
  if (abs < 3_600_000) return `${Math.floor(totalS / 60)}m${String(totalS % 60).padStart(2, '0')}s`;
  const totalM = Math.round(ms / 60_000);
  return `${Math.floor(totalM / 60)}h${String(totalM % 60).padStart(2, '0')}m`;
}

/** How long ago an epoch-ms time was, against `nowMs`; `never` for null. */
export function ago(atMs: number | null | undefined, nowMs: number): string {
  return atMs === null || atMs === undefined ? 'never' : `${duration(Math.max(0, nowMs - atMs))} ago`;
}

/** `k=v, k2=v2` (or `-`). */
export function metadataText(metadata: Record<string, string>): string {
  const entries = Object.entries(metadata);
  return entries.length === 0 ? '-' : entries.map(([key, value]) => `${key}=${value}`).join(', ');
}

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
