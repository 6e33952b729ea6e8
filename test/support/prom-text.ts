/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), enough for the
 * metrics tests: `# HELP`, `# TYPE` and sample lines with optional labels. Anything else
 * throws, so a malformed scrape fails the test rather than being skipped.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const match = LABEL.exec(text);
    if (!match || LABEL.lastIndex === start) throw new Error(`bad labels in: ${line}`);
    labels[match[1]!] = match[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  // As Prometheus (Go's ParseFloat): special values in any case; prom-client writes "Nan".
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
  return value;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { name, type: 'untyped', help: '', samples: [] }));
    return found;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('# HELP ')) {
      const [, name, ...help] = line.split(' ').slice(1);
      family(name!).help = help.join(' ');
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      if (!name || !type || !['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type)) throw new Error(`bad TYPE line: ${line}`);
      family(name).type = type;
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`bad sample line: ${line}`);
    const name = match[1]!;
    const sample: Sample = { name, labels: match[3] ? parseLabels(match[3], line) : {}, value: parseValue(match[4]!, line) };
    // A sample belongs to the family it is declared under: the longest declared prefix.
    const owner = families.has(name) ? name : SUFFIXES.map((suffix) => (name.endsWith(suffix) ? name.slice(0, -suffix.length) : '')).find((base) => base && families.has(base));
    if (!owner) throw new Error(`sample without a TYPE: ${line}`);
    family(owner).samples.push(sample);
  }
  return families;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when none. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name !== name) continue;
      if (Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) return sample.value;
    }
  }
  return undefined;
}
