import { DnsRecorder, XdsRecorder } from './dns-xds-recorders.js';
import { bucketOf } from './histogram-values.js';

/**
 * The metrics port every protocol adapter records into (docs/metrics.md, "Protocols"): requests
 * by operation and outcome with their latency, slots held now and refused at a cap, pushes and
 * the time from a change to its push; and for DNS and xDS their own figures (dns-xds-recorders.ts).
 *
 * Label sets are bounded by declaration: an adapter declares its operations and held pools once,
 * when it is wired, and gets one recorder per operation, bound to its counters. A name that was
 * not declared is refused there (an error at start-up, not a new series per request), and a
 * request costs a few array writes: no label object, no map lookup, no allocation. The figures
 * are read (and labelled) at scrape time only (adapter-series.ts).
 */

/** How a request ended. Every adapter uses the same six words, so dashboards compare them. */
export const outcomes = ['ok', 'bad_input', 'unauthenticated', 'forbidden', 'limited', 'error'] as const;
export type Outcome = (typeof outcomes)[number];

/** Index of each outcome in the recorders' arrays (a property read, not a search). */
const OUTCOME_INDEX: Readonly<Record<Outcome, number>> = { ok: 0, bad_input: 1, unauthenticated: 2, forbidden: 3, limited: 4, error: 5 };

/**
 * The outcome of an HTTP answer by its status: 401 unauthenticated, 403 forbidden, 429 limited,
 * 5xx error (503 not ready included), any other 4xx bad input (404 on an unknown instance
 * too: the client named something that is not there), anything below 400 ok.
 */
export function outcomeOfStatus(statusCode: number): Outcome {
  if (statusCode < 400) return 'ok';
  if (statusCode === 401) return 'unauthenticated';
  if (statusCode === 403) return 'forbidden';
  if (statusCode === 429) return 'limited';
  if (statusCode >= 500) return 'error';
  return 'bad_input';
}

/** Latency buckets of the adapters' requests, in seconds (as the HTTP histogram's). */
export const REQUEST_BUCKETS_S: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Buckets of the time from a change to its push, in seconds (the watch coalescing window is 50 ms). */
export const PUSH_DELAY_BUCKETS_S: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Bounds of what may be declared: they bound every series' label set (docs/metrics.md). */
export const adapterMetricsLimits = {
  /** Most adapters (protocols) of one peer. */
  adaptersMax: 16,
  /** Most operations one adapter declares (the Eureka API under its two prefixes has about 50 routes). */
  operationsPerAdapterMax: 128,
  /** Most held pools one adapter declares (streams, long polls, connections...). */
  poolsPerAdapterMax: 8,
  /** Principals listed per held pool: the heaviest few only. */
  heaviestPrincipals: 5,
} as const;

const ADAPTER_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const POOL_NAME = /^[a-z][a-z0-9_]{0,31}$/;
/** Printable ASCII but quotes and backslashes (route patterns like `GET /v1/services/:service` fit). */
const OPERATION_NAME = /^[\x21\x23-\x5b\x5d-\x7e][\x20\x21\x23-\x5b\x5d-\x7e]{0,127}$/;

/** Thrown when wiring declares a name or one too many: a programming error, found at start-up. */
export class MetricsDeclarationError extends Error {
  override name = 'MetricsDeclarationError';
}

/** A monotonic clock in milliseconds (performance.now by default) and the peer's clock for change times. */
export interface AdapterMetricsClocks {
  /** Monotonic milliseconds, for latencies: `performance.now()` in a peer, a fake in tests. */
  monotonicMs(): number;
  /** The peer's clock (epoch ms), which stamps changes: for the time from a change to its push. */
  nowMs(): number;
}

/** One operation of one adapter: its counts and latency histogram per outcome, pre-bound. */
export class OperationRecorder {
  /** Observations per outcome and bucket: outcome `o`'s buckets start at `o * (bounds + 1)`. */
  readonly buckets: Float64Array;
  readonly sums = new Float64Array(outcomes.length);
  readonly counts = new Float64Array(outcomes.length);

  constructor(
    readonly adapter: string,
    readonly operation: string,
    private readonly clocks: AdapterMetricsClocks,
  ) {
    this.buckets = new Float64Array(outcomes.length * (REQUEST_BUCKETS_S.length + 1));
  }

  /** The time to pass to `done` (monotonic ms). */
  start(): number {
    return this.clocks.monotonicMs();
  }

  /** Records a request that started at `startedMs` (from `start()`) and ended now. */
  done(outcome: Outcome, startedMs: number): void {
    this.observe(outcome, (this.clocks.monotonicMs() - startedMs) / 1000);
  }

  /** Records a request that took `seconds` (when the adapter measured it itself, as fastify does). */
  observe(outcome: Outcome, seconds: number): void {
    const index = OUTCOME_INDEX[outcome];
    this.buckets[index * (REQUEST_BUCKETS_S.length + 1) + bucketOf(REQUEST_BUCKETS_S, seconds)]! += 1;
    this.sums[index]! += seconds;
    this.counts[index]! += 1;
  }

  /** Requests that ended with `outcome` so far. */
  count(outcome: Outcome): number {
    return this.counts[OUTCOME_INDEX[outcome]]!;
  }
}

/** What a held pool reads from: a `HeldShares` (security/held-shares.ts) is one. */
export interface HeldSource {
  readonly held: number;
  /** The `count` principals holding the most slots, most first. */
  heaviest(count: number): Array<{ owner: string; held: number }>;
}

/** One held pool of an adapter (its streams, long polls, connections): read at scrape time, refusals counted. */
export class HeldPoolRecorder {
  /** Refusals at the peer's cap and at a principal's share. */
  refusedAtPeerCap = 0;
  refusedAtPrincipalShare = 0;

  constructor(
    readonly adapter: string,
    readonly pool: string,
    readonly source: HeldSource,
  ) {}

  /**
   * A client was refused a slot: `cap` says which cap (a `HeldRefusal`'s `cap`). When the
   * refusal answers a request (a 429, RESOURCE_EXHAUSTED), record that request as `limited` too.
   */
  refused(cap: 'peer' | 'principal'): void {
    if (cap === 'peer') this.refusedAtPeerCap += 1;
    else this.refusedAtPrincipalShare += 1;
  }
}

/** The pushes of one adapter (watch events, xDS responses, Consul wake-ups...) and the time from each change to its push. */
export class PushRecorder {
  readonly delayBuckets = new Float64Array(PUSH_DELAY_BUCKETS_S.length + 1);
  delaySum = 0;
  sent = 0;

  constructor(
    readonly adapter: string,
    private readonly clocks: AdapterMetricsClocks,
  ) {}

  /**
   * `count` pushes (one per subscriber written to) of a change made at `changedAtMs` (the peer's
   * clock: a view's `builtAtMs`, a record's write time); each counts the delay until now.
   */
  pushed(changedAtMs: number, count = 1): void {
    const seconds = Math.max(0, this.clocks.nowMs() - changedAtMs) / 1000;
    this.delayBuckets[bucketOf(PUSH_DELAY_BUCKETS_S, seconds)]! += count;
    this.delaySum += seconds * count;
    this.sent += count;
  }
}

/** What one adapter declared, and the recorders it was given. */
export class AdapterRecorders {
  readonly operations = new Map<string, OperationRecorder>();
  readonly pools = new Map<string, HeldPoolRecorder>();
  readonly pushes: PushRecorder;

  constructor(
    readonly adapter: string,
    private readonly clocks: AdapterMetricsClocks,
  ) {
    this.pushes = new PushRecorder(adapter, clocks);
  }

  /** Declares operations (again is fine: each name once); refuses a bad name or one past the bound. */
  declare(operations: readonly string[]): this {
    for (const operation of operations) {
      if (this.operations.has(operation)) continue;
      if (!OPERATION_NAME.test(operation)) throw new MetricsDeclarationError(`adapter ${this.adapter}: bad operation name ${JSON.stringify(operation.slice(0, 64))}`);
      if (this.operations.size >= adapterMetricsLimits.operationsPerAdapterMax) {
        throw new MetricsDeclarationError(`adapter ${this.adapter}: more than ${adapterMetricsLimits.operationsPerAdapterMax} operations`);
      }
      this.operations.set(operation, new OperationRecorder(this.adapter, operation, this.clocks));
    }
    return this;
  }

  /** The recorder of a declared operation; an undeclared one is refused (its label set stays bounded). */
  operation(name: string): OperationRecorder {
    const recorder = this.operations.get(name);
    if (!recorder) throw new MetricsDeclarationError(`adapter ${this.adapter}: operation ${JSON.stringify(name.slice(0, 64))} was not declared`);
    return recorder;
  }

  /** Declares a held pool read from `source` (a `HeldShares`); a pool of that name is replaced (a restarted listener). */
  pool(name: string, source: HeldSource): HeldPoolRecorder {
    if (!POOL_NAME.test(name)) throw new MetricsDeclarationError(`adapter ${this.adapter}: bad pool name ${JSON.stringify(name.slice(0, 64))}`);
    if (!this.pools.has(name) && this.pools.size >= adapterMetricsLimits.poolsPerAdapterMax) {
      throw new MetricsDeclarationError(`adapter ${this.adapter}: more than ${adapterMetricsLimits.poolsPerAdapterMax} held pools`);
    }
    const recorder = new HeldPoolRecorder(this.adapter, name, source);
    this.pools.set(name, recorder);
    return recorder;
  }

  /**
   * Requests so far (every operation and outcome); those refused (answered `limited`,
   * `unauthenticated` or `forbidden`); slots refused at a cap (`HeldPoolRecorder.refused`: a
   * refusal that answers a request is in both, as a refused request and as a refused slot);
   * slots held now.
   */
  totals(): { requests: number; refused: number; refusedAtCap: number; held: number; byOutcome: Record<Outcome, number> } {
    const byOutcome = Object.fromEntries(outcomes.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
    let requests = 0;
    for (const recorder of this.operations.values()) {
      for (const outcome of outcomes) {
        const count = recorder.count(outcome);
        byOutcome[outcome] += count;
        requests += count;
      }
    }
    let refusedAtCap = 0;
    let held = 0;
    for (const pool of this.pools.values()) {
      refusedAtCap += pool.refusedAtPeerCap + pool.refusedAtPrincipalShare;
      held += pool.source.held;
    }
    return { requests, refused: byOutcome.limited + byOutcome.unauthenticated + byOutcome.forbidden, refusedAtCap, held, byOutcome };
  }
}

/**
 * The adapters' metrics of one peer (a RegistryNode holds one; its /metrics exports it). An
 * adapter asks for its recorders once, when it is wired:
 *
 *     const consul = node.adapterMetrics.adapter('consul', ['catalog.service', 'health.service']);
 *     const catalog = consul.operation('catalog.service');
 *     // per request:
 *     const startedMs = catalog.start();
 *     ...; catalog.done('ok', startedMs);
 */
export class AdapterMetrics {
  private readonly adapters = new Map<string, AdapterRecorders>();
  /** DNS queries by transport, type and response code; UDP truncations (the DNS adapter records them). */
  readonly dns = new DnsRecorder();
  /** xDS ACKs and NACKs by resource type (the xDS adapter records them). */
  readonly xds = new XdsRecorder();

  constructor(readonly clocks: AdapterMetricsClocks) {}

  /** Declares an adapter and operations of it (again adds what is new); answers its recorders. */
  adapter(name: string, operations: readonly string[] = []): AdapterRecorders {
    let recorders = this.adapters.get(name);
    if (!recorders) {
      if (!ADAPTER_NAME.test(name)) throw new MetricsDeclarationError(`bad adapter name ${JSON.stringify(name.slice(0, 64))}`);
      if (this.adapters.size >= adapterMetricsLimits.adaptersMax) throw new MetricsDeclarationError(`more than ${adapterMetricsLimits.adaptersMax} adapters`);
      recorders = new AdapterRecorders(name, this.clocks);
      this.adapters.set(name, recorders);
    }
    return recorders.declare(operations);
  }

  /** Every declared adapter, in declaration order. */
  all(): IterableIterator<AdapterRecorders> {
    return this.adapters.values();
  }
}
