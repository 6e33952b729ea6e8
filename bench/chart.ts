/**
 * Charts of the benchmark results, drawn by the script itself (no external service): small
 * multiples as one SVG file, and ASCII bars for the markdown. Pure: data in, text out.
 */

export interface Series {
  name: string;
  /** [x, y] points; y NaN is left out. */
  points: [number, number][];
  /** Drawn dashed (a reference measured in the same run). */
  dashed?: boolean;
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  /** A logarithmic x axis (instance counts). */
  logX?: boolean;
  series: Series[];
  /** A horizontal target line. */
  target?: number;
}

const WIDTH = 340;
const HEIGHT = 220;
const MARGIN = { left: 58, right: 14, top: 30, bottom: 40 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function formatTick(value: number): string {
  if (value >= 1_000_000) return `${round1(value / 1_000_000)}M`;
  if (value >= 1_000) return `${round1(value / 1_000)}k`;
  return String(round1(value));
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** One panel as an SVG group at (x, y). */
function panelSvg(panel: Panel, x: number, y: number): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xs = [...new Set(panel.series.flatMap((s) => s.points.map(([px]) => px)))].sort((a, b) => a - b);
  const ys = panel.series.flatMap((s) => s.points.map(([, py]) => py)).filter((v) => Number.isFinite(v));
  const yMax = niceMax(Math.max(...ys, panel.target ?? 0) * 1.05);
  const fx = (value: number) => {
    if (xs.length < 2) return plotW / 2;
    const [lo, hi] = panel.logX ? [Math.log10(xs[0]!), Math.log10(xs.at(-1)!)] : [xs[0]!, xs.at(-1)!];
    const v = panel.logX ? Math.log10(value) : value;
    return ((v - lo) / (hi - lo || 1)) * plotW;
  };
  const fy = (value: number) => plotH - (value / yMax) * plotH;
  const parts: string[] = [`<g transform="translate(${x + MARGIN.left},${y + MARGIN.top})">`];
  parts.push(`<text x="${plotW / 2}" y="-12" text-anchor="middle" font-size="12" font-weight="bold">${escapeXml(panel.title)}</text>`);
  parts.push(`<rect x="0" y="0" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`);
  for (let i = 0; i <= 4; i++) {
    const value = (yMax * i) / 4;
    parts.push(`<line x1="0" x2="${plotW}" y1="${fy(value)}" y2="${fy(value)}" stroke="#eee"/>`);
    parts.push(`<text x="-6" y="${fy(value) + 4}" text-anchor="end" font-size="10">${formatTick(value)}</text>`);
  }
  for (const value of xs) parts.push(`<text x="${fx(value)}" y="${plotH + 14}" text-anchor="middle" font-size="10">${formatTick(value)}</text>`);
  parts.push(`<text x="${plotW / 2}" y="${plotH + 30}" text-anchor="middle" font-size="10">${escapeXml(panel.xLabel)}</text>`);
  parts.push(`<text transform="translate(-44,${plotH / 2}) rotate(-90)" text-anchor="middle" font-size="10">${escapeXml(panel.yLabel)}</text>`);
  if (panel.target !== undefined) {
    parts.push(`<line x1="0" x2="${plotW}" y1="${fy(panel.target)}" y2="${fy(panel.target)}" stroke="#f80" stroke-dasharray="2,3"/>`);
    parts.push(`<text x="${plotW - 2}" y="${fy(panel.target) - 3}" text-anchor="end" font-size="9" fill="#f80">target ${formatTick(panel.target)}</text>`);
  }
  panel.series.forEach((series, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    const points = series.points.filter(([, py]) => Number.isFinite(py));
    const path = points.map(([px, py]) => `${fx(px).toFixed(1)},${fy(py).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"${series.dashed ? ' stroke-dasharray="5,4"' : ''}/>`);
    for (const [px, py] of points) parts.push(`<circle cx="${fx(px).toFixed(1)}" cy="${fy(py).toFixed(1)}" r="3" fill="${colour}"/>`);
    parts.push(`<text x="6" y="${12 + index * 12}" font-size="10" fill="${colour}">${escapeXml(series.name)}</text>`);
  });
  parts.push('</g>');
  return parts.join('\n');
}

/** Small multiples: `columns` panels a row. */
export function renderSvg(title: string, panels: Panel[], columns = 3): string {
  const rows = Math.ceil(panels.length / columns);
  const width = WIDTH * columns;
  const height = HEIGHT * rows + 30;
  const body = panels.map((panel, i) => panelSvg(panel, (i % columns) * WIDTH, 30 + Math.floor(i / columns) * HEIGHT)).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
    body,
    '</svg>',
    '',
  ].join('\n');
}

/** A panel as ASCII bars, one line per point of each series. */
export function renderAscii(panel: Panel, widthChars = 40): string {
  const values = panel.series.flatMap((s) => s.points.map(([, y]) => y)).filter((v) => Number.isFinite(v));
  const max = Math.max(...values, panel.target ?? 0, 1e-9);
  const lines = [`${panel.title} (${panel.yLabel}; by ${panel.xLabel})${panel.target === undefined ? '' : `, target ${formatTick(panel.target)}`}`];
  const labelWidth = Math.max(...panel.series.map((s) => s.name.length));
  for (const series of panel.series) {
    for (const [x, y] of series.points) {
      const bar = Number.isFinite(y) ? '#'.repeat(Math.max(1, Math.round((y / max) * widthChars))) : '(not measured)';
      lines.push(`  ${series.name.padEnd(labelWidth)}  ${formatTick(x).padStart(5)}  ${bar} ${Number.isFinite(y) ? round1(y) : ''}`);
    }
  }
  return lines.join('\n');
}
