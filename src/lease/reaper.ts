import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import { serviceKeyString, type StoredInstance } from '../registry/types.js';
import { heldAfterRestart } from '../registry/visibility.js';
import { EvictionPlanner, runCap } from './eviction-budget.js';
import type { EvictionSafety, HeldCounts } from './eviction-safety.js';
import { LeaseRule, LeaseScan, stillCandidates, type MembershipView, type ReaperScan, type ScanContext } from './lease-scan.js';
import { TurnPace } from './turn-pace.js';

export { orphanSweeper, scanLeases, type MembershipView, type ReaperScan, type ScanContext } from './lease-scan.js';

/**
 * Entries a timer-driven run scans before it yields the event loop (about 1 ms at 100,000
 * instances): a registry larger than this is scanned in slices, so that a heartbeat never
 * waits behind more than one slice. Counted in entries, not time, so that a run is the same
 * under the fake clock.
 */
export const REAPER_SLICE_ENTRIES = 10_000;

/**
 * Most expired tombstones one run purges; the rest are purged by the next runs (in the order
 * the scan found them). Every purge is a store change that the change feed announces (views, the
 * Eureka delta window, watch streams, the digest): 1,000,000 tombstones expiring together
 * (a mass deregistration one TTL ago) purged in one run would be one turn of the event loop
 * proportional to the registry (not measured; bench/loop-stalls.ts does not reach it). A
 * tombstone past its TTL is harmless while it waits (it is not served, and a newer write
 * replaces it as usual); at one run a second, 1,000,000 are gone in under 4 minutes. A run that
 * comes several intervals after the last (a large registry's runs are spaced:
 * `REAPER_SCAN_SHARE_MAX`) purges this many per interval since, so the pace stays the same.
 */
export const TOMBSTONE_PURGE_MAX_PER_RUN = 5_000;

/**
 * Most instances of down owners a timer-driven run hides in one turn of the event loop (their
 * grace ran out); the rest are hidden in later turns of the same run (`setTimeout(0)` through
 * the clock), each looked at again first. Each hide is a store change that the change feed
 * announces (views, the Eureka delta window, watch streams, the digest): an owner of 100,000
 * instances going down (a tenth of a registry of 1,000,000, under the partition guard's share)
 * had all of them hidden in one turn: a run of 106 ms against 53 ms for the same run with
 * nothing to do, with a silent logger (`npx tsx bench/registry-passes.ts`, 2026-12-05). Reads stop serving them when their grace ends whether hidden yet or not
 * (visibility.ts), so what the turns spread out is the announcement, over a few ms, not what
 * is served. `runOnce` (the admin routes, tests) still hides everything in one call.
 */
export const HIDE_MAX_PER_TURN = 10_000;

/**
 * Most of this peer's expired instances a timer-driven run flags held in one turn: the rest
 * are flagged in later turns, each looked at again first. Each flag is a store change the
 * change feed announces; 100,000 of them were about 50-65 ms of the run's last turn when a
 * tenth of a registry of 1,000,000 expired together (bench/findings.md, 2026-12-06 evening).
 * What waits for a later turn is served meanwhile as it was before the run: held by rule
 * (taken back at a restart and not heard since, or being asked about while other peers are
 * up: visibility.ts), or, on a peer alone, held by an eviction cap and not served from its
 * lease's end until a run flags it, which those turns prolong by a few ms.
 */
export const HOLD_MAX_PER_TURN = 10_000;

/**
 * Most evictions a timer-driven run makes in one turn of the event loop; the rest of its plan
 * is evicted in later turns, each looked at again first. An eviction is a replicated write (a
 * tombstone: a version, the store, the digest, the change feed, the outbox), several µs each:
 * a run evicting 30,000 of this peer's instances among 1,000,000 (a tenth expired; the
 * per-service cap held the rest) had a turn of 336-343 ms with every eviction in it, 171-200
 * ms with them in turns (`npx tsx bench/registry-passes.ts`, its fifth pass; bench/findings.md,
 * 2026-12-06 evening). The caps bound how many one run evicts, not how long that takes.
 */
export const EVICT_MAX_PER_TURN = 2_000;

/**
 * Expired entries a timer-driven run's decisions go through in one turn of the event loop: the
 * re-check of a sliced scan's candidates, the restart rule, the lease check's round, the shuffle
 * of what is cleared, and the caps' plan. Each is a few hundred ns per entry, and they add up:
 * when a tenth of 1,000,000 instances expired together, a run made them all in its last turn,
 * 84-225 ms (bench/findings.md, 2026-12-06 evening). In turns of this many, a turn of them is a
 * few ms; the acts that follow re-check what they act on.
 */
export const DECIDE_MAX_PER_TURN = 20_000;

/**
 * Most of the event loop a timer-driven run's scan may take, as a share of the time between two
 * runs. A scan goes over every stored record, and past a few hundred thousand it costs more than
 * its slices' bounds suggest: 1,000,000 instances scattered through memory took 100-190 ms a
 * run, a tenth to a fifth of a core every second for a registry with nothing to evict
 * (bench/findings.md, 2026-12-07). When a run's scan held the loop longer than this share of
 * `evictionIntervalMs`, the next run waits until the scan is this share of the time since the
 * last began (ticks in between start nothing; the peers' answer to a lease check still starts
 * one at once): at 1,000,000 a run every 2-4 s instead of every second, an expired instance
 * evicted that much later, tombstones purged at the same pace per interval. A registry whose
 * scan stays under it (about 50 ms at the default interval: a few hundred thousand instances)
 * runs at every tick, as before.
 */
export const REAPER_SCAN_SHARE_MAX = 0.05;
/** The longest a large registry's scan may space runs, in eviction intervals, whatever its scan took. */
export const REAPER_SPACING_MAX_INTERVALS = 10;

/** What a run may leave for later turns of the event loop. */
type TurnWork = 'hides' | 'holds' | 'evictions';

/** What a run does per turn of the event loop, at most (a whole `runOnce`: no bound). */
interface TurnBounds {
  /** Entries its scan visits. */
  scan: number;
  /** Expired entries its decisions go through. */
  decisions: number;
  hides: number;
  holds: number;
  evictions: number;
}

const ALL = Number.POSITIVE_INFINITY;
const UNBOUNDED: TurnBounds = { scan: ALL, decisions: ALL, hides: ALL, holds: ALL, evictions: ALL };

/**
 * What the owner does before it evicts an instance whose lease ran out: asks the other peers
 * whether one of them hears its client (replication/lease-check.ts). Absent: evict at once.
 */
export interface ExpiryCheck {
  /**
   * A run's round of questions. `answered` is called once the peers have answered about the
   * ones asked in it, so that they are evicted without waiting for the next interval.
   */
  begin(nowMs: number, answered: () => void): ExpiryRound;
}

/**
 * One run's questions: `cleared` for each expired instance, in any number of turns, then
 * `close`. A run dropped before its end (`stop`, `runOnce`) never closes its round, and the
 * next run begins another: a round changes nothing until it is closed.
 */
export interface ExpiryRound {
  /**
   * Whether `entry` (owned here, lease ended, no guard holding it) is cleared for eviction now;
   * if not, it stays served while the peers are asked.
   */
  cleared(entry: StoredInstance): boolean;
  /** Every expired instance was given: the questions about the new ones start. */
  close(): void;
}

export interface ReaperComponents {
  clock: Clock;
  rng: Rng;
  registry: Registry;
  membership: MembershipView;
  safety: EvictionSafety;
  logger: Logger;
  expiryCheck?: ExpiryCheck;
}

export interface ReaperInit {
  evictionIntervalMs: number;
  tombstoneTtlMs: number;
  /** How long an owner stays down before its expired instances are evicted for good. */
  orphanTimeoutMs: number;
  /** The configured heartbeat interval (instances may renew at their own; see lease-terms.ts). */
  heartbeatIntervalMs: number;
  renewalWindowMs: number;
  /** Entries per slice of a timer-driven run; default `REAPER_SLICE_ENTRIES` (tests set it low). */
  sliceEntries?: number;
  /** Most tombstones purged per run; default `TOMBSTONE_PURGE_MAX_PER_RUN` (tests set it low). */
  purgeMaxPerRun?: number;
  /** Most instances of down owners a timer-driven run hides per turn; default `HIDE_MAX_PER_TURN` (tests set it low). */
  hidesPerTurn?: number;
  /** Most instances held by rule a timer-driven run flags per turn; default `HOLD_MAX_PER_TURN` (tests set it low). */
  holdsPerTurn?: number;
  /** Most evictions a timer-driven run makes per turn; default `EVICT_MAX_PER_TURN` (tests set it low). */
  evictionsPerTurn?: number;
  /** Most expired entries a timer-driven run decides on per turn; default `DECIDE_MAX_PER_TURN` (tests set it low). */
  decisionsPerTurn?: number;
  /** Largest share of the loop a scan may take before runs are spaced; default `REAPER_SCAN_SHARE_MAX` (tests set it). */
  scanShareMax?: number;
}

/** What one run did; exposed for tests, metrics and `/v1/cluster`. */
export interface ReaperRun {
  atMs: number;
  evicted: number;
  orphansEvicted: number;
  hidden: number;
  tombstonesPurged: number;
  held: HeldCounts;
  /** Owned instances whose lease ran out, kept served while the other peers are asked whether they hear them. */
  checking: number;
  /** Ms the run's scan held the event loop, its slices added up (what spaces the runs of a large registry). */
  scanMs: number;
}

/** A timer-driven run going over several turns: its steps, and the timer of the next. */
interface RunInProgress {
  steps: Generator<void, ReaperRun>;
  next: TimerHandle | undefined;
  /** Told when its decisions are made, or when it ends otherwise (dropped, or a step threw): `runSoon`'s caller. */
  ended?: () => void;
}

/**
 * Appends `items` to `to` one by one: `to.push(...items)` passes every item as an argument, and
 * past about 125,000 of them (a tenth of a registry of 1,000,000 expiring, a down owner's
 * orphans) the call overflows the stack, which stopped the peer.
 */
function appendAll<T>(to: T[], items: readonly T[]): void {
  for (let i = 0; i < items.length; i++) to.push(items[i]!);
}

/**
 * `serviceKeyString` of an entry, as one string per service for as long as the function is
 * kept (a run): a run may go through a tenth of the registry, and the store gives every record
 * of a service the same namespace and name strings, so two lookups on strings whose hash is
 * known replace building and hashing a key per entry (planning 100,000 candidates took 69-77
 * ms with a key each: bench/findings.md, 2026-12-06 evening).
 */
function serviceKeys(): (entry: StoredInstance) => string {
  const byNamespace = new Map<string, Map<string, string>>();
  return (entry) => {
    const { namespace, service } = entry.record;
    let names = byNamespace.get(namespace);
    if (names === undefined) byNamespace.set(namespace, (names = new Map()));
    let key = names.get(service);
    if (key === undefined) names.set(service, (key = serviceKeyString(namespace, service)));
    return key;
  };
}

/**
 * Runs every `evictionIntervalMs`: evicts this peer's expired instances (replicated deletes),
 * hides foreign ones whose owner is down and whose grace ran out (local only), sweeps orphans
 * and drops expired tombstones, within the eviction guards: self-preservation stops owned
 * evictions, the partition guard holds down owners' instances, and the per-service and
 * per-run caps bound what one window and one run may evict (in random order).
 */
export class Reaper {
  private timer: TimerHandle | undefined;
  private readonly log: Logger;
  /** Whether the partition guard held down owners' instances at the last run. */
  private holdingDownOwners = false;
  /** The timer-driven run in progress, while its scan or its decisions take more than one turn. */
  private running: RunInProgress | undefined;
  /** The next turn of a timer-driven run's hides, holds or evictions, while more are left than one turn takes. */
  private readonly later = new Map<TurnWork, TimerHandle>();
  /** When the last scan began and how long its slices held the loop: whether the next run waits (`spacingMs`). */
  private lastScan: { startedAtMs: number; scanMs: number } | undefined;
  lastRun: ReaperRun | undefined;

  constructor(
    private readonly components: ReaperComponents,
    private readonly init: ReaperInit,
  ) {
    this.log = components.logger.child({ component: 'reaper' });
  }

  start(): void {
    this.timer ??= this.components.clock.setInterval(() => this.begin(true), this.init.evictionIntervalMs);
  }

  /** Stops the timer and drops a run in progress (what it had not done yet is not done). */
  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.cancelRunning();
  }

  /**
   * The peers answered a lease check: what they do not hear is evicted now, not an interval
   * later, however the runs are spaced (one round is asked per run: at most one more scan each).
   */
  private answered(): void {
    if (this.timer) this.begin(false);
  }

  /**
   * A timer-driven run: at once when the registry fits in one slice and little expired,
   * otherwise over several turns (`drive`): its scan in slices of `sliceEntries`, its decisions
   * in turns of `decisionsPerTurn`, then its acts in turns of their own. While a run is going,
   * a tick (or a lease check's answer) starts nothing: the run in progress acts when it ends,
   * and an instance whose check was answered while its scan went on is in it (one answered
   * after the run's round asked about it waits for the next tick).
   */
  private begin(spaced: boolean): void {
    if (this.running || this.later.size > 0) return;
    if (spaced && this.tooSoon(this.components.clock.nowMs())) return;
    const run: RunInProgress = { steps: this.run(this.turnBounds), next: undefined };
    this.running = run;
    this.drive(run);
  }

  /**
   * The least time from one timer-driven run's start to the next, after a scan that held the
   * loop `scanMs` in all: none while that is within `REAPER_SCAN_SHARE_MAX` of the interval
   * (every tick runs), else enough for the scan to be that share of it, at most
   * `REAPER_SPACING_MAX_INTERVALS` intervals.
   */
  private spacingMs(scanMs: number): number {
    const { evictionIntervalMs } = this.init;
    const share = this.init.scanShareMax ?? REAPER_SCAN_SHARE_MAX;
    if (scanMs <= share * evictionIntervalMs) return 0;
    return Math.min(scanMs / share, REAPER_SPACING_MAX_INTERVALS * evictionIntervalMs);
  }

  /**
   * Whether a tick at `nowMs` comes before the spacing after the last scan is over. A tenth of an
   * interval early counts as on time (a tick fires a ms or so either side of its mark); a clock
   * set back behind the last scan's start waits for nothing (the spacing would last as long as
   * the step back).
   */
  private tooSoon(nowMs: number): boolean {
    const last = this.lastScan;
    if (last === undefined || nowMs < last.startedAtMs) return false;
    const spacingMs = this.spacingMs(last.scanMs);
    return spacingMs > 0 && nowMs < last.startedAtMs + spacingMs - this.init.evictionIntervalMs / 10;
  }

  /**
   * How many intervals' worth a run starting at `startedAtMs` makes up for: those since the last
   * scan began when that scan spaced the runs (at most `REAPER_SPACING_MAX_INTERVALS`), else 1.
   */
  private intervalsSinceLast(startedAtMs: number): number {
    const last = this.lastScan;
    if (last === undefined || this.spacingMs(last.scanMs) === 0) return 1;
    const intervals = Math.round((startedAtMs - last.startedAtMs) / this.init.evictionIntervalMs);
    return Math.min(REAPER_SPACING_MAX_INTERVALS, Math.max(1, intervals));
  }

  /** Runs one turn's step of `run`, and schedules the next through the clock until it is done. */
  private drive(run: RunInProgress): void {
    if (this.running !== run) return;
    run.next = undefined;
    let done: boolean | undefined;
    try {
      done = run.steps.next().done;
    } finally {
      // A step that threw (a store listener failing under an eviction) ends the run: the next
      // tick starts a new one, as it would after a run that ended.
      if (done !== false) {
        if (this.running === run) this.running = undefined;
        run.ended?.();
      }
    }
    if (done === false) run.next = this.components.clock.setTimeout(() => this.drive(run), 0);
  }

  /** A timer-driven run's bounds per turn. */
  private get turnBounds(): TurnBounds {
    return {
      scan: Math.max(1, this.init.sliceEntries ?? REAPER_SLICE_ENTRIES),
      decisions: Math.max(1, this.init.decisionsPerTurn ?? DECIDE_MAX_PER_TURN),
      hides: Math.max(1, this.init.hidesPerTurn ?? HIDE_MAX_PER_TURN),
      holds: Math.max(1, this.init.holdsPerTurn ?? HOLD_MAX_PER_TURN),
      evictions: Math.max(1, this.init.evictionsPerTurn ?? EVICT_MAX_PER_TURN),
    };
  }

  /**
   * Does `act` for `entries` at most `perTurn` a turn of the event loop, from the first turn
   * on when `fresh` (the entries were decided in this turn) and otherwise only on those the
   * predicate `stillDue()` gives for the turn (its time, rule and guards) keeps: a heartbeat, a
   * takeover or a guard turning on since the decision leaves them alone.
   */
  private inTurns(
    work: TurnWork,
    entries: readonly StoredInstance[],
    perTurn: number,
    act: (entry: StoredInstance) => void,
    stillDue: () => (entry: StoredInstance) => boolean,
    fresh: boolean,
    from = 0,
  ): void {
    const due = fresh ? undefined : stillDue();
    const end = Math.min(entries.length, from + perTurn);
    for (let i = from; i < end; i++) {
      const entry = entries[i]!;
      if (due === undefined || due(entry)) act(entry);
    }
    if (end === entries.length) return;
    const next = this.components.clock.setTimeout(() => {
      this.later.delete(work);
      this.inTurns(work, entries, perTurn, act, stillDue, false, end);
    }, 0);
    this.later.set(work, next);
  }

  /** Whether `entry` is still the stored entry of its key (nothing wrote or purged it since). */
  private isStored(entry: StoredInstance): boolean {
    return this.components.registry.store.get(entry.record) === entry;
  }

  /**
   * Hides `entries` (down owners' instances whose grace ran out, as a run found them) in turns,
   * adding to `run.hidden`; one decided in an earlier turn is hidden if still stored, not
   * hidden, the rule still saying so, while the partition guard does not hold down owners.
   */
  private hideInTurns(entries: readonly StoredInstance[], run: ReaperRun, perTurn: number, fresh: boolean): void {
    const { registry, safety, clock } = this.components;
    const hide = (entry: StoredInstance) => {
      registry.hide(entry);
      run.hidden += 1;
    };
    const stillDue = () => {
      if (safety.guards().holdDownOwners) return () => false;
      const rule = new LeaseRule(this.context(clock.nowMs()));
      return (entry: StoredInstance) => this.isStored(entry) && rule.bucketOf(entry) === 'expiredForeign';
    };
    this.inTurns('hides', entries, perTurn, hide, stillDue, fresh);
  }

  /**
   * Flags `entries` held (this peer's expired instances: see HOLD_MAX_PER_TURN) in turns; one
   * decided in an earlier turn is flagged if still stored, not held yet, its lease still over.
   */
  private holdInTurns(entries: readonly StoredInstance[], perTurn: number, fresh: boolean): void {
    const { registry, clock } = this.components;
    const stillDue = () => {
      const nowMs = clock.nowMs();
      return (entry: StoredInstance) => this.isStored(entry) && !entry.held && entry.leaseExpiresAtMs <= nowMs;
    };
    this.inTurns('holds', entries, perTurn, (entry) => registry.hold(entry), stillDue, fresh);
  }

  /**
   * Evicts `entries` (a run's plan, in its random order) in turns, counted in `run`; one decided
   * in an earlier turn is evicted if still stored, the rule still putting it where
   * the run found it (this peer's and expired, or an orphan), not held by the restart rule, and
   * the guard that would keep it (self-preservation, or the partition guard for an orphan)
   * still off.
   */
  private evictInTurns(entries: readonly StoredInstance[], run: ReaperRun, perTurn: number, fresh: boolean, serviceOf: (entry: StoredInstance) => string): void {
    const { registry, safety, clock, membership } = this.components;
    const evict = (entry: StoredInstance) => {
      const orphan = entry.record.owner !== registry.peerId;
      registry.evict(entry, orphan ? `orphan: owner ${entry.record.owner} down` : 'lease expired');
      safety.recordEviction(serviceOf(entry), clock.nowMs());
      if (orphan) run.orphansEvicted += 1;
      else run.evicted += 1;
    };
    const stillDue = () => {
      const nowMs = clock.nowMs();
      const guards = safety.guards();
      const rule = new LeaseRule(this.context(nowMs));
      return (entry: StoredInstance) => {
        // Not `entry.held`: one a cap held at an earlier run is a candidate again at this one.
        if (!this.isStored(entry)) return false;
        const bucket = rule.bucketOf(entry);
        if (bucket === 'orphans') return !guards.holdDownOwners;
        return bucket === 'expiredOwned' && !guards.suspendOwnedExpiry && !heldAfterRestart(entry, nowMs, membership);
      };
    };
    this.inTurns('evictions', entries, perTurn, evict, stillDue, fresh);
  }

  private cancelRunning(): void {
    this.running?.next?.cancel();
    this.running?.ended?.();
    this.running = undefined;
    for (const next of this.later.values()) next.cancel();
    this.later.clear();
  }

  private context(nowMs: number): ScanContext {
    const { registry, membership } = this.components;
    return { ...this.init, nowMs, selfId: registry.peerId, membership, graceUnderway: (owner) => registry.graceUnderway(owner) };
  }

  /**
   * A run now, in turns as a timer-driven one (the admin routes' answer to a guard switched: a
   * whole `runOnce` of 1,000,000 instances held the loop 64-526 ms). A run in progress is
   * dropped: this one supersedes it. Resolves once its decisions are made (its acts go on in
   * their turns), or once it is dropped in turn or a step of it threw.
   */
  runSoon(): Promise<void> {
    this.cancelRunning();
    return new Promise((resolve) => {
      const run: RunInProgress = { steps: this.run(this.turnBounds), next: undefined, ended: () => resolve() };
      this.running = run;
      this.drive(run);
    });
  }

  /**
   * One whole pass over the registry, synchronous, so nothing changes under it (tests call it).
   * A run in progress is dropped: this one supersedes it.
   */
  runOnce(): ReaperRun {
    this.cancelRunning();
    const step = this.run(UNBOUNDED).next();
    if (step.done !== true) throw new Error('an unbounded reaper run yielded');
    return step.value;
  }

  /**
   * A run, step by step: each `yield` ends a turn of the event loop (none with `UNBOUNDED`).
   * Its scan goes through the registry in slices; if it took more than one, time has passed
   * and the store may have changed since the slices saw the candidates, so each is kept only
   * if it is still the stored entry and the rule, asked again now, agrees. The figures the
   * guards read (expected renewals, owned instances, ownership, service sizes, served) stay
   * those of the slices: they are rates and ratios over a renewal window or counts that a few
   * writes move by a few, so a run's few milliseconds of lag change no decision that the next
   * run, a second later, would not make anyway.
   */
  private *run(bounds: TurnBounds): Generator<void, ReaperRun> {
    const { clock, registry } = this.components;
    const scan = new LeaseScan(registry.store.allServices(), this.context(clock.nowMs()));
    // A registry that fits in one slice is scanned whole (a step of exactly its size would
    // stop at its last entry and yield before seeing that nothing is left).
    const slice = registry.store.size <= bounds.scan ? ALL : bounds.scan;
    const startedAtMs = scan.rule.nowMs;
    let sliced = false;
    let scanMs = 0;
    for (let sliceStartMs = startedAtMs; ; sliceStartMs = clock.nowMs()) {
      const done = scan.step(slice);
      // Each slice from its own start: the turns between slices are other work's.
      scanMs += clock.nowMs() - sliceStartMs;
      if (done) break;
      sliced = true;
      yield;
    }
    const intervals = this.intervalsSinceLast(startedAtMs);
    this.lastScan = { startedAtMs, scanMs };
    const nowMs = clock.nowMs();
    registry.flushLogSummary();
    const pace = new TurnPace(bounds.decisions);
    const found = sliced ? yield* stillCandidates(scan.result, new LeaseRule(this.context(nowMs)), (entry) => this.isStored(entry), pace) : scan.result;
    return yield* this.decide(found, nowMs, bounds, pace, scanMs, intervals);
  }

  /**
   * Decides on a scan's candidates within the guards, in turns of `pace`: purges, hides, holds
   * and evictions; records the run. The partition guard's new grace is given in the turn the
   * guards are assessed, purges as they are decided (each on an entry still stored); hides, holds and evictions after every
   * decision, in turns of their own (`hideInTurns`, `holdInTurns`, `evictInTurns`), counted in
   * the run as they are done (holds when planned), re-checked first when the decisions took more
   * than one turn.
   */
  private *decide(scan: ReaperScan, nowMs: number, bounds: TurnBounds, pace: TurnPace, scanMs: number, intervals: number): Generator<void, ReaperRun> {
    const { registry, membership, rng, safety } = this.components;
    const guards = safety.assess(nowMs, scan.expectedRenewals, scan.ownedInstances, scan.ownership);
    const held: HeldCounts = { selfPreservation: 0, partitionGuard: 0, serviceCap: 0, runCap: 0 };

    let toHide: readonly StoredInstance[] = [];
    if (guards.holdDownOwners) held.partitionGuard += scan.expiredForeign.length;
    else if (this.holdingDownOwners && !safety.partitionGuardSwitchedOff) {
      // The partition guard lifted by itself: the share of down owners fell below the ratio,
      // most often because the peers cut off with this one are coming back one by one. What it
      // held gets one grace period from now, as when an owner goes down, rather than being
      // hidden at once: the owners not seen back yet may be a moment behind (found by chaos:
      // seed 8675349, 5 peers, a peer hid five instances of an owner it saw back 140 ms later,
      // while their client kept heartbeating it). An operator's release hides them at once.
      // In the turn of `assess`, not in turns: from the moment the guard is off, reads no
      // longer serve them by the guard, and a read between two turns would see them gone (and
      // a view it built would keep them out, since a new grace is not announced as a change).
      // One lease update each, off the change feed.
      for (const entry of scan.expiredForeign) if (this.isStored(entry)) registry.graceAgain(entry);
    } else toHide = scan.expiredForeign;
    this.holdingDownOwners = guards.holdDownOwners;

    const purged = scan.expiredTombstones.slice(0, intervals * Math.max(1, this.init.purgeMaxPerRun ?? TOMBSTONE_PURGE_MAX_PER_RUN));
    let tombstonesPurged = 0;
    for (const entry of purged) {
      // A purge goes by key: one whose key was written since a yield must stay.
      if (this.isStored(entry)) {
        registry.purge(entry);
        tombstonesPurged += 1;
      }
      if (pace.spent()) yield;
    }

    /** Held by a rule the reads apply too (visibility.ts), or by a cap: flagged in turns (`holdInTurns`). */
    const toHold: StoredInstance[] = [];
    /** This peer's expired instances cleared for eviction, then the orphans: the caps' candidates. */
    const candidates: StoredInstance[] = [];
    let checking = 0;
    if (guards.suspendOwnedExpiry) held.selfPreservation = scan.expiredOwned.length;
    else {
      // An instance this peer took back at a restart (from its data dir or a snapshot) and has
      // not heard since may be heartbeating a peer it cannot reach: held by the same rule the
      // reads apply (see heldAfterRestart), so that no read sees it unserved before this run.
      // Before evicting the others, the other peers are asked whether one of them hears the
      // client; the instances asked about stay served (held) until they answer. In the scan's
      // order, which is the store's (near enough the entries' memory order), not shuffled
      // first: in a random order each entry read costs a cache miss (bench/findings.md,
      // 2026-12-06 evening). Only what is evicted needs the random order: shuffled below.
      const round = this.components.expiryCheck?.begin(nowMs, () => this.answered());
      for (const entry of scan.expiredOwned) {
        if (heldAfterRestart(entry, nowMs, membership)) {
          held.partitionGuard += 1;
          toHold.push(entry);
        } else if (round === undefined || round.cleared(entry)) candidates.push(entry);
        else {
          toHold.push(entry);
          checking += 1;
        }
        if (pace.spent()) yield;
      }
      round?.close();
      // Fisher-Yates, from the last item down (the draws of `shuffled`), in turns.
      for (let i = candidates.length - 1; i > 0; i--) {
        const j = randomInt(rng, i + 1);
        const swapped = candidates[i]!;
        candidates[i] = candidates[j]!;
        candidates[j] = swapped;
        if (pace.spent()) yield;
      }
    }
    if (!guards.holdDownOwners) appendAll(candidates, scan.orphans);
    const serviceOf = serviceKeys();
    const planner = new EvictionPlanner(serviceOf, safety.serviceBudgets(nowMs, scan.serviceSizes), {
      serviceMaxRatio: safety.serviceMaxRatio,
      runMax: runCap(scan.served, safety.runMaxRatio),
    });
    for (const candidate of candidates) {
      planner.add(candidate);
      if (pace.spent()) yield;
    }
    const { plan } = planner;
    const run: ReaperRun = {
      atMs: nowMs,
      evicted: 0,
      orphansEvicted: 0,
      hidden: 0,
      tombstonesPurged,
      held,
      checking,
      scanMs,
    };
    // Decisions that took turns of their own leave their acts a turn of their own too.
    const fresh = !pace.yielded;
    if (!fresh && pace.counted) yield;
    this.evictInTurns(plan.evict, run, bounds.evictions, fresh, serviceOf);
    // Flagged in turns like the holds by rule (see HOLD_MAX_PER_TURN).
    appendAll(toHold, plan.heldByService);
    appendAll(toHold, plan.heldByRun);
    held.serviceCap = plan.heldByService.length;
    held.runCap = plan.heldByRun.length;
    safety.recordHeld(nowMs, held, plan.cappedByService);

    this.hideInTurns(toHide, run, bounds.hides, fresh);
    this.holdInTurns(toHold, bounds.holds, fresh);
    if (plan.evict.length > 0 || held.serviceCap + held.runCap > 0) this.log.debug({ ...run }, 'reaper run');
    this.lastRun = run;
    return run;
  }
}
