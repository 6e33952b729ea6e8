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

const ratio = (value: number, doc: string): RatioSetting => ({ kind: 'ratio', min: 0, max: 1, default: value, doc });
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
    'How often the lease reaper runs. An expired instance is evicted at most this long after its lease ends (plus the few ms a large run takes; more in a registry of about a million, below). Each run looks at every stored record: past 10,000 records it scans them in slices of 10,000 (about 1 ms each), yielding the event loop between slices so that no heartbeat waits behind more than one, and re-checks each instance it found just before acting on it (one changed meanwhile by a heartbeat, a write or a peer coming back is left alone). A registry so large that a run\'s scan takes more than 5% of this interval (about a million instances at 1 s) is scanned less often, so that the scan stays at 5% of the loop: at most 10 intervals apart, an expired instance evicted that much later (a lease check\'s answer still starts a run at once, and tombstones are purged at the same pace per interval).',
  ),
  tombstoneTtlMs: ms(
    1_000,
    7 * DAY_MS,
    600_000,
    'How long a cancelled or evicted instance is remembered as a tombstone (from the time of the delete), so that a late or replayed older write cannot bring it back. Longer costs memory under churn; it should exceed the longest partition you expect a peer to come back from.',
  ),
  ownerDownGraceMs: ms(
    0,
    DAY_MS,
    60_000,
    'When a peer goes down, its instances stay served on the other peers for this long (or for their own lease, if longer) before they are hidden, unless a client heartbeats them meanwhile (then they are taken over at once). A peer cannot tell a dead peer from one it is cut off from: longer rides out longer partitions of a peer that owns too little of the registry for the partition guard, at the cost of listing the instances of a really dead peer (whose clients died with it) that much longer. 0: just the lease.',
  ),
  orphanTimeoutMs: ms(
    1_000,
    30 * DAY_MS,
    300_000,
    'How long a peer may stay down before one live peer (the lowest id) evicts for good, and replicates the eviction of, the instances it owned that nobody heartbeats any more. Shorter cleans up after a removed peer sooner; longer tolerates longer peer outages.',
  ),
  probeIntervalMs: ms(
    50,
    60_000,
    1_000,
    'How often a peer probes one other peer (round robin) for liveness. Shorter finds a dead peer sooner at the cost of more small pings.',
  ),
  probeTimeoutMs: ms(
    10,
    60_000,
    500,
    'How long a direct probe waits for an answer before asking other peers to probe (indirect probes wait twice this). A peer held suspect or down is also pinged directly every half of this (at least 50 ms), so a healed link is noticed within that. Must exceed the round-trip time between peers.',
  ),
  indirectProbes: count(
    0,
    10,
    2,
    'How many other peers are asked to probe a peer that missed a direct probe, before it is suspected. More tolerates more lossy links.',
  ),
  suspicionTimeoutMs: ms(
    100,
    600_000,
    5_000,
    'How long a suspected peer has to answer before it is declared down (its instances then get one grace period elsewhere, see `ownerDownGraceMs`). Longer rides out longer hiccups; shorter fails over sooner.',
  ),
  antiEntropyIntervalMs: ms(
    100,
    600_000,
    3_000,
    'Average time between two anti-entropy rounds (digest comparisons with a random live peer; jittered by up to +50%). An idle, converged cluster pays one small round trip per round.',
  ),
  crossRegionAntiEntropyIntervalMs: ms(
    100,
    3_600_000,
    15_000,
    'Average time between two anti-entropy rounds with a peer in ANOTHER region (jittered by up to +50%); rounds within the region follow `antiEntropyIntervalMs`. Longer costs fewer cross-region bytes; shorter repairs cross-region drift sooner.',
  ),
  antiEntropyMaxBucketsPerRound: count(
    1,
    4_096,
    1_024,
    'Most differing digest buckets (of 4,096) reconciled in one round; the rest follow in rounds chained at once, until every bucket was covered. Each round goes in reconcile calls of at most 5,000 entries (docs/replication.md).',
  ),
  replicationBatchMaxRecords: count(1, 10_000, 500, 'Most records in one replication batch; a full batch is sent at once.'),
  replicationBatchDelayMs: ms(
    0,
    10_000,
    5,
    'How long the first write of a batch waits for others before it is sent. Longer batches better (fewer requests) but adds that much replication delay.',
  ),
  crossRegionBatchDelayMs: ms(
    0,
    60_000,
    100,
    'How long the first write of a batch to a peer in ANOTHER region waits for others. Cross-region links are slow and costly: longer batches (and gzip) cut requests and bytes, at the cost of that much delay.',
  ),
  replicationQueueMaxRecords: count(
    1,
    10_000_000,
    100_000,
    'Most writes queued for one peer (for example while it is down). Beyond it the oldest are dropped and counted; anti-entropy repairs them.',
  ),
  replicationConcurrency: count(1, 64, 1, 'Replication batches in flight to one peer at once. Writes are versioned, so order does not matter for correctness.'),
  replicationRetryBaseMs: ms(1, 600_000, 100, 'First retry delay after a failed batch; doubles with each further failure (with jitter).'),
  replicationRetryMaxMs: ms(1, 3_600_000, 10_000, 'Longest retry delay for a failing peer.'),
  compressMinBytes: bytes(
    0,
    1_024 * 1_024 * 1_024,
    1_024,
    'Calls to peers in another region whose body is at least this large are gzip-compressed (and their answers too). 0 compresses every cross-region call.',
  ),
  peerCallTimeoutMs: ms(
    10,
    600_000,
    5_000,
    'Timeout of one call to another peer (replication batch, anti-entropy exchange, snapshot page).',
  ),
  eurekaDeltaWindowMs: ms(
    180_000,
    HOUR_MS,
    180_000,
    'How far back `GET /eureka/apps/delta` reaches: the last change of every instance that changed this recently is kept in memory and served to Eureka clients, which fetch a delta every 30 s by default and fall back to a full fetch when the hash code disagrees. Longer tolerates clients that miss more fetches; it costs memory for every instance that changed within it. Never below 3 minutes (Eureka\'s own retention).',
  ),
  watchCoalesceMs: ms(
    0,
    10_000,
    50,
    'Watch streams: changes within this window reach each subscriber as one event per service, so a burst is one push. Longer means fewer pushes under churn but later news.',
  ),
  watchMaxWatchers: count(1, 1_000_000, 10_000, 'Most watch streams plus long polls one peer serves at once, and most long polls on their own; more are refused with 429 (a refused stream is told to long-poll, which its own budget still admits: push-pull).'),
  watchKeepAliveMs: ms(1_000, 600_000, 15_000, 'Watch streams: how often an idle stream gets a keep-alive comment, so proxies do not cut it.'),
  watchMaxBufferedBytes: bytes(
    1_024,
    1_024 * 1_024 * 1_024,
    1_048_576,
    'Watch streams: a subscriber whose unsent data exceeds this (beyond its first snapshots, which are always sent whole) when a new event comes is dropped (with a `dropped` event) rather than buffered without bound.',
  ),
  longPollMaxWaitMs: ms(1_000, 3_600_000, 600_000, 'Longest `wait` a long poll may ask for; longer asks are cut to it.'),
  renewalThresholdRatio: ratio(
    0.85,
    'Self-preservation: when the renewals this peer received in the last `renewalWindowMs` fall below this share of the number expected from the instances it owns, it stops evicting until they recover (a network problem on its side, not a mass death). Higher protects sooner but also holds back real evictions sooner; 0 switches self-preservation off.',
  ),
  renewalWindowMs: ms(
    1_000,
    HOUR_MS,
    60_000,
    'Self-preservation: the window over which renewals are counted. Longer smooths bursts; shorter reacts faster.',
  ),
  selfPreservationMinInstances: count(
    0,
    1_000_000,
    10,
    'Self-preservation: with fewer owned instances than this it never engages (too little to judge from: one dead instance out of three is not a network problem). 0 lets it judge any number.',
  ),
  selfPreservationWarmUpMs: ms(
    0,
    HOUR_MS,
    60_000,
    'Self-preservation: how long after start it cannot engage, while clients reconnect to a (re)started peer.',
  ),
  partitionGuardRatio: ratio(
    0.15,
    'Partition guard: when peers that are down own at least this share of the registry, their instances are held (served, not hidden after their grace lease, not swept as orphans) until they come back or an operator releases them. Lower protects against smaller partitions but keeps instances of really dead peers longer; 0 switches the guard off.',
  ),
  serviceEvictionMaxRatio: ratio(
    0.3,
    'Per-service protection: at most this share of one service\'s instances (and always at least one) is evicted within `serviceEvictionWindowMs`; the rest are kept, marked as held, logged and counted, and evicted in later windows if they stay silent. 1 switches the cap off.',
  ),
  serviceEvictionWindowMs: ms(
    1_000,
    HOUR_MS,
    60_000,
    'Per-service protection: the window of the per-service eviction cap. Longer spreads a mass eviction over more time.',
  ),
  evictionMaxPerRunRatio: ratio(
    0.1,
    'Per-run cap: one reaper run evicts at most this share of the served registry (at least one), in random order, so no single service is wiped first. 1 switches the cap off.',
  ),
  protectThresholdRatio: ratio(
    0,
    'Read-side protect threshold (per service, overridable in `services`): when the share of a service\'s served instances that are UP with a live lease falls below it, reads return all its served instances (any status), flagged `protected`, instead of overloading the few left. 0 (the default) switches it off.',
  ),
} satisfies Record<string, NumericSetting>;

/** Limits on what clients may send. */
export const limitSettings = {
  bodyMaxBytes: bytes(1_024, 16 * 1024 * 1024, 65_536, 'Largest client request body; larger ones are refused with 413 before they are parsed.'),
  metadataMaxKeys: count(0, 1_000, 32, 'Most metadata keys one instance may carry.'),
  metadataKeyMaxLength: count(1, 1_024, 128, 'Longest metadata key, in characters.'),
  metadataValueMaxLength: count(0, 65_536, 512, 'Longest metadata value, in characters.'),
  peerBodyMaxBytes: bytes(
    65_536,
    1_024 * 1_024 * 1_024,
    256 * 1_024 * 1_024,
    'Largest request body on the peer routes (replication batches, anti-entropy exchanges). Must hold the largest exchange after a long partition. A request that fails peer authentication is refused once its body has been received (the signature covers the body), so this is also what an unauthenticated caller can make a peer read.',
  ),
  instancesPerServiceMax: count(
    1,
    10_000_000,
    10_000,
    'Most instances (not cancelled or evicted) one service may hold; a register that would add one more is refused with 409 `REG_ERR_QUOTA_EXCEEDED` (re-registering an existing instance always works). Checked by the peer that accepts the register, so concurrent registers on several peers may pass it by a few. Protects memory and every reader of the service from a runaway client.',
  ),
  instancesPerNamespaceMax: count(
    1,
    100_000_000,
    1_000_000,
    'Most instances one namespace may hold, all services together; beyond it new registrations get 409 `REG_ERR_QUOTA_EXCEEDED`. Keeps one tenant from filling every peer\'s memory. The default holds ten times a fleet of 100,000 instances: at about 640 bytes an instance (bench/RESULTS.md) a full namespace takes some 640 MB on every peer; lower it on small machines or to keep tenants apart.',
  ),
  rateLimitPerSecond: count(
    0,
    1_000_000,
    10_000,
    'Requests per second one client may send: per token, or per address for requests without a valid token (dev mode, probes, bad credentials) from other hosts (loopback callers: `rateLimitLoopbackPerSecond`). A token bucket: `rateLimitBurst` at once, refilled at this rate; beyond it 429 `REG_ERR_RATE_LIMITED` with `Retry-After`. Peer routes are exempt. The default is sized so that a fleet of 100,000 instances heartbeating every 10 s (10,000/s) fits through a single address or token, e.g. a NAT gateway, a proxy that hides the source address, or one shared token; it only refuses a client that sends more than about half of what one peer can serve (some 19,000 registers/s, bench/RESULTS.md). Lower it to share a peer fairly between many clients. 0 switches rate limiting off.',
  ),
  rateLimitLoopbackPerSecond: count(
    0,
    1_000_000,
    0,
    'Requests per second one loopback address (127.0.0.0/8, ::1) may send without a valid token, with the same `rateLimitBurst`. 0 (the default): not limited, because a caller on the peer\'s own host (a sidecar, a local agent, a load test, `npm run cluster`) could stop the peer anyway. Set it when a reverse proxy on the same host forwards outside clients, which then all arrive from 127.0.0.1 (or give them tokens, which are limited one by one).',
  ),
  listingCacheMaxBytes: bytes(
    0,
    4 * 1024 * 1024 * 1024,
    8 * 1024 * 1024,
    'Most memory the JSON of listed instances may take: `GET /v1/services/{service}` keeps the parts of each listed instance that only change with its record (about 550 bytes an instance with five metadata keys), so a list is not serialized anew on every read; given back as records change. Past it, the other instances are serialized on every read. Only listings fill it: a register\'s or heartbeat\'s answer uses the parts a listing kept, and keeps none itself. 0 switches the cache off.',
  ),
  rateLimitBurst: count(
    1,
    10_000_000,
    50_000,
    'Requests one client may send at once before `rateLimitPerSecond` applies (the size of its token bucket). The default lets a mass restart of 100,000 instances behind one address register at the full speed of a peer (some 19,000/s: 100,000 in about 5 s, while the bucket refills 50,000).',
  ),
  rateLimitClientsMax: count(
    100,
    10_000_000,
    100_000,
    'Most clients (tokens and addresses) whose request rate is tracked at once; beyond it the least recently seen is forgotten (and starts again with a full bucket). Bounds the memory a flood of addresses can take.',
  ),
  heldSharePerPrincipalRatio: ratio(
    0.25,
    'Share of each pool of held slots one principal (a valid token, or the source address of a request without one) may hold at once, as a fraction of the pool\'s peer-wide cap: native watch streams and long polls (`cluster.watchMaxWatchers`), Consul blocking queries (`consul.blockingQueriesMax`), xDS streams, DNS TCP connections. At least 1 slot, at most the whole pool. A request past its share gets 429 `REG_ERR_HELD_SHARE` (its protocol\'s refusal elsewhere), naming the pool and this setting. The default lets four clients hold everything between them, so one read-only token holding all it may still leaves three quarters of every pool to the others (operators included); a held slot costs 7-9 KB, so caps are generous and the share is about fairness. Raise it toward 1 for a peer with one big client (a single proxy or mesh control plane); lower it for many tenants, and give each client its own token (clients behind one NAT or proxy without tokens share the share of its address).',
  ),
  headersTimeoutMs: ms(
    1_000,
    600_000,
    10_000,
    'How long a client may take to send the headers of a request; a slower one is cut (slow-loris). Must not exceed `requestTimeoutMs`.',
  ),
  requestTimeoutMs: ms(
    1_000,
    3_600_000,
    60_000,
    'How long a client may take to send a whole request (headers and body); a slower one gets 408 and is cut. Must leave time to upload the largest peer body (`peerBodyMaxBytes`) over the slowest link. Answers may take longer: long polls and watch streams are not cut by it.',
  ),
  keepAliveTimeoutMs: ms(
    100,
    600_000,
    5_000,
    'How long an idle keep-alive connection is kept open between two requests. Longer saves reconnects for chatty clients; shorter frees sockets held by idle ones. Peers keep their own sockets for 30 s and reconnect as needed.',
  ),
} satisfies Record<string, NumericSetting>;

/** Settings of the `security` object (see docs/security.md); the same on every peer of a cluster. */
export const securitySettings = {
  peerReplayWindowMs: ms(
    1_000,
    600_000,
    30_000,
    'Peer signing: a signed peer request is accepted when its timestamp is within this much of the receiver\'s clock, either way, and its nonce was not seen within the window. It must exceed the clock skew between peers plus the time a call takes; longer tolerates worse clocks but remembers more nonces.',
  ),
  peerNonceMax: count(
    1_000,
    10_000_000,
    200_000,
    'Peer signing: most nonces remembered at once (each for twice the replay window). When full, further signed requests get 429 (peers back off and retry) rather than a replay being let through.',
  ),
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
  lockWaitMs: ms(
    0,
    600_000,
    3_000,
    'When another running peer holds the data dir\'s lock at start, how long to wait for it to let go before refusing to start (exit 2): covers a supervisor that starts the new process while the old one is still shutting down (a peer shuts down within about a second). A dead or zombie holder (killed and not yet reaped) never holds the lock, so a restart right after a crash needs no wait. Longer than 15 s also outlasts a lock left on a shared volume by a peer on another host that died (its lock goes stale after 15 s without a refresh). 0 refuses at once.',
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
export type SecuritySettingName = keyof typeof securitySettings;
export type ClusterSettings = Record<ClusterSettingName, number>;
export type LimitSettings = Record<LimitSettingName, number>;
export type StorageSettings = SettingValues<typeof storageSettings>;
export type SecuritySettings = Record<SecuritySettingName, number>;

/** The defaults of a settings table. */
export function defaultsOf<T extends Record<string, Setting>>(table: T): SettingValues<T> {
  return Object.fromEntries(Object.entries(table).map(([name, setting]) => [name, setting.default])) as SettingValues<T>;
}
