/**
 * Every tunable setting, with its unit, bounds, default and the trade-off it makes. This table
 * is the single source for validation (config/load.ts), the profiles (config/profiles.ts) and
 * the configuration reference (docs/configuration.md is generated from it by
 * `npm run docs:config`; a test fails when the two disagree).
 */
export interface IntSetting {
  kind: 'int';
  unit: 'ms' | 'count' | 'bytes' | 'ratio-percent';
  min: number;
  max: number;
  default: number;
  doc: string;
}

export interface RatioSetting {
  kind: 'ratio';
  min: number;
  max: number;
  default: number;
  doc: string;
}

export type NumericSetting = IntSetting | RatioSetting;

/** A setting that takes one of a few named values (e.g. the sync policy). */
export interface EnumSetting<V extends string = string> {
  kind: 'enum';
  values: readonly V[];
  default: V;
  doc: string;
}

export type Setting = NumericSetting | EnumSetting;

/** The value type of each setting of a table: the enum's values, or a number. */
export type SettingValues<T extends Record<string, Setting>> = {
  [K in keyof T]: T[K] extends EnumSetting<infer V> ? V : number;
};

const ms = (min: number, max: number, defaultMs: number, doc: string): IntSetting => ({
  kind: 'int',
  unit: 'ms',
  min,
  max,
  default: defaultMs,
  doc,
});
const count = (min: number, max: number, value: number, doc: string): IntSetting => ({
  kind: 'int',
  unit: 'count',
  min,
  max,
  default: value,
  doc,
});
const bytes = (min: number, max: number, value: number, doc: string): IntSetting => ({
  kind: 'int',
  unit: 'bytes',
  min,
  max,
  default: value,
  doc,
});

const oneOf = <V extends string>(values: readonly V[], value: V, doc: string): EnumSetting<V> => ({
  kind: 'enum',
  values,
  default: value,
  doc,
});

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Settings of the `cluster` object: they should be the same on every peer of a cluster. */
export const clusterSettings = {
  heartbeatIntervalMs: ms(
    100,
    HOUR_MS,
    10_000,
    'How often clients are told to heartbeat. Shorter detects dead instances sooner at the cost of more (local, never replicated) heartbeat traffic. Must be below `leaseDurationMs`.',
  ),
  leaseDurationMs: ms(
    500,
    DAY_MS,
    30_000,
    'Lease given to an instance whose register body asks for none: it is evicted this long after its last heartbeat. Shorter removes dead instances faster; too short evicts instances whose heartbeats are merely late. Keep it at least 3 x `heartbeatIntervalMs`.',
  ),
  minLeaseDurationMs: ms(100, DAY_MS, 1_000, 'Smallest `leaseDurationMs` a client may ask for in its register body.'),
  maxLeaseDurationMs: ms(
    100,
    7 * DAY_MS,
    600_000,
    'Largest `leaseDurationMs` a client may ask for. A long lease keeps a crashed instance listed that long.',
  ),
  evictionIntervalMs: ms(
    50,
    60_000,
    1_000,
    'How often the lease reaper runs. An expired instance is evicted at most this long after its lease ends; each run scans the whole registry.',
  ),
  tombstoneTtlMs: ms(
    1_000,
    7 * DAY_MS,
    600_000,
    'How long a cancelled or evicted instance is remembered as a tombstone (from the time of the delete), so that a late or replayed older write cannot bring it back. Longer costs memory under churn; it should exceed the longest partition you expect a peer to come back from.',
  ),
  orphanTimeoutMs: ms(
    1_000,
    30 * DAY_MS,
    300_000,
    'How long a peer may stay down before one live peer (the lowest id) evicts for good, and replicates the eviction of, the instances it owned that nobody heartbeats any more. Shorter cleans up after a removed peer sooner; longer tolerates longer peer outages.',
  ),
} satisfies Record<string, NumericSetting>;

/** Limits on what clients may send. */
export const limitSettings = {
  bodyMaxBytes: bytes(1_024, 16 * 1024 * 1024, 65_536, 'Largest client request body; larger ones are refused with 413 before they are parsed.'),
  metadataMaxKeys: count(0, 1_000, 32, 'Most metadata keys one instance may carry.'),
  metadataKeyMaxLength: count(1, 1_024, 128, 'Longest metadata key, in characters.'),
  metadataValueMaxLength: count(0, 65_536, 512, 'Longest metadata value, in characters.'),
} satisfies Record<string, NumericSetting>;

/** When a write counts as durable; see docs/durability.md for what each one risks. */
export const syncPolicies = ['always', 'interval', 'never'] as const;
export type SyncPolicy = (typeof syncPolicies)[number];

const MIB = 1024 * 1024;

/**
 * Settings of the `storage` object: how a peer with a data dir (`dataDir`) keeps its writes.
 * They are per peer; without a data dir they are ignored (the peer is purely in memory).
 */
export const storageSettings = {
  syncPolicy: oneOf(
    syncPolicies,
    'interval',
    '`always`: a write is answered only once it is fsynced (concurrent writes share one fsync); nothing acknowledged is lost even on power loss, at the cost of one fsync of latency per write. `interval`: a write is answered once it is in the operating system (a crashed or killed peer loses nothing), and the log is fsynced every `syncIntervalMs`; a power loss or kernel crash loses at most the writes of the last `syncIntervalMs` plus one fsync. `never`: the peer never fsyncs the log and leaves it to the operating system (Linux writes dirty pages back within about 30 s); a power loss may lose that much. Also `--sync-policy` / `REGISTRY_SYNC_POLICY`.',
  ),
  syncIntervalMs: ms(
    1,
    60_000,
    200,
    'With `syncPolicy` `interval`: how often the log is fsynced (only when something was written since). The window of acknowledged writes a power loss can take; shorter costs more fsyncs (each runs off the request path).',
  ),
  snapshotIntervalMs: ms(
    1_000,
    7 * DAY_MS,
    600_000,
    'A snapshot of every record is written this often when something was written since the last one, and the log behind the previous snapshot is deleted. Shorter keeps the log and the restart short; each snapshot writes the whole registry once.',
  ),
  snapshotLogBytes: bytes(
    64 * 1024,
    1024 * MIB,
    64 * MIB,
    'A snapshot is also written as soon as this many bytes of log have been written since the last one. Bounds the disk the log takes and the replay time at start (about 1 s per 40 MiB, i.e. 100,000 records). At most 1 GiB, so that a segment always stays readable in one piece (files are read whole, up to 2 GiB).',
  ),
  retryIntervalMs: ms(
    100,
    600_000,
    5_000,
    'While the data dir refuses writes (disk full, read-only, I/O error), how often the peer tries again by writing a fresh snapshot; client writes are answered `REG_ERR_STORAGE` until one succeeds.',
  ),
} satisfies Record<string, Setting>;

export type ClusterSettingName = keyof typeof clusterSettings;
export type LimitSettingName = keyof typeof limitSettings;
export type ClusterSettings = Record<ClusterSettingName, number>;
export type LimitSettings = Record<LimitSettingName, number>;
export type StorageSettings = SettingValues<typeof storageSettings>;

/** The defaults of a settings table. */
export function defaultsOf<T extends Record<string, Setting>>(table: T): SettingValues<T> {
  return Object.fromEntries(Object.entries(table).map(([name, setting]) => [name, setting.default])) as SettingValues<T>;
}
