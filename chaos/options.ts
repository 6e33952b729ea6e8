/**
 * Command-line options of `npm run chaos` (and their defaults), parsed without I/O so they can
 * be tested.
 */
export interface ChaosCliOptions {
  durationMs: number;
  seed: number;
  /** Cluster sizes to run, one run each. */
  peers: number[];
  /** Clients per run; by default ten per peer. */
  clients: number | null;
  restarts: 'with' | 'without' | 'both';
  /** Killed peers come back at once (`bounce`), once the others noticed (`detected`), or either; `none`: no kills. */
  kills: 'bounce' | 'detected' | 'both' | 'none';
  /** One fault at a time (`--serial`) instead of kills overlapping network faults. */
  serial: boolean;
  /**
   * `--peer-logs LEVEL` (info, debug): the peers log at that level (warn otherwise) and every
   * run writes their logs next to its history, one JSON line per log line with the peer and
   * incarnation that wrote it (`@peer`, `@incarnation`): what to read when a failure needs explaining. null: warn, not written.
   */
  peerLogs: 'info' | 'debug' | null;
  /**
   * `--sweep N`: N seeds one after another (`seed`, `seed + 1`, ...; see sweepSeeds), every
   * cluster size of `peers` for each, stopping at the first failure; null: one seed.
   */
  sweep: number | null;
}

/** Most seeds one sweep runs (at about 100 s a run, 1,000 seeds of two forms take two days). */
export const SWEEP_MAX_SEEDS = 1_000;
/** Seeds are integers from 0 to this (the seeded Rng takes 31 bits). */
export const SEED_MAX = 2 ** 31 - 1;

export const DEFAULT_DURATION_MS = 90_000;

/** `90s`, `30m`, `1h`, `1500ms` or a bare number of seconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new Error(`--duration: expected a duration like 90s, 30m or 1h (got ${JSON.stringify(text)})`);
  const value = Number(match[1]);
  const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[match[2] ?? 's']!;
  const ms = Math.round(value * unitMs);
  if (ms < 10_000) throw new Error('--duration: at least 10s');
  return ms;
}

export function parseChaosArgs(argv: readonly string[], defaultSeed: number): ChaosCliOptions {
  const options: ChaosCliOptions = { durationMs: DEFAULT_DURATION_MS, seed: defaultSeed, peers: [3, 5], clients: null, restarts: 'both', kills: 'both', serial: false, sweep: null, peerLogs: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    const need = () => {
      if (value === undefined) throw new Error(`${flag}: a value is required`);
      i += 1;
      return value;
    };
    if (flag === '--serial') {
      options.serial = true;
      continue;
    }
    if (flag === '--duration') options.durationMs = parseDuration(need());
    else if (flag === '--seed') options.seed = parseInteger(flag, need(), 0, SEED_MAX);
    else if (flag === '--sweep') options.sweep = parseInteger(flag, need(), 1, SWEEP_MAX_SEEDS);
    else if (flag === '--peers') options.peers = need().split(',').map((size) => parseInteger(flag, size, 2, 7));
    else if (flag === '--clients') options.clients = parseInteger(flag, need(), 1, 500);
    else if (flag === '--peer-logs') {
      const level = need();
      if (level !== 'info' && level !== 'debug') throw new Error('--peer-logs: info or debug');
      options.peerLogs = level;
    }
    else if (flag === '--restarts') {
      const restarts = need();
      if (restarts !== 'with' && restarts !== 'without' && restarts !== 'both') throw new Error('--restarts: with, without or both');
      options.restarts = restarts;
    } else if (flag === '--kills') {
      const kills = need();
      if (kills !== 'bounce' && kills !== 'detected' && kills !== 'both' && kills !== 'none') throw new Error('--kills: bounce, detected, both or none');
      options.kills = kills;
    } else throw new Error(`unknown option ${flag} (known: --duration, --seed, --peers, --clients, --restarts, --kills, --serial, --sweep, --peer-logs)`);
  }
  return options;
}

/**
 * The seeds of a sweep: `count` consecutive seeds from `first` (wrapping past SEED_MAX to 0).
 * Without `--seed`, `first` is the default seed, taken from the clock: each sweep then tries
 * seeds nobody tried before; with it, the same sweep can be run again.
 */
export function sweepSeeds(first: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => (first + i) % (SEED_MAX + 1));
}

/**
 * The command that runs the same choices again (timing still varies): the flags that differ
 * from the defaults, for one seed and one cluster size.
 */
export function replayCommand(options: ChaosCliOptions, seed: number, peers: number): string {
  return `npm run chaos -- ${[`--seed ${seed}`, `--peers ${peers}`, ...choiceFlags(options)].join(' ')}`;
}

/** The flags, other than the seed, the cluster sizes and the sweep, that differ from the defaults. */
export function choiceFlags(options: ChaosCliOptions): string[] {
  const flags: string[] = [];
  if (options.durationMs !== DEFAULT_DURATION_MS) flags.push(`--duration ${Math.round(options.durationMs / 1_000)}s`);
  if (options.clients !== null) flags.push(`--clients ${options.clients}`);
  if (options.restarts !== 'both') flags.push(`--restarts ${options.restarts}`);
  if (options.kills !== 'both') flags.push(`--kills ${options.kills}`);
  if (options.serial) flags.push('--serial');
  return flags;
}

function parseInteger(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${flag}: an integer from ${min} to ${max} (got ${JSON.stringify(text)})`);
  return value;
}
