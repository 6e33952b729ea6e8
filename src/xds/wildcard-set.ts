import type { Clock, TimerHandle } from '../clock/clock.js';
import type { ServiceViews } from '../views/service-views.js';
import type { ResolvedService, ServiceEntry } from './catalog.js';
import type { XdsLbPolicy } from './declaration.js';

/**
 * Units of work a wildcard build does in one turn of the event loop before it gives the loop
 * back: 1 per service looked at, plus its served instances when its stable view was built
 * again, plus them again when its resources were (catalog.ts). A service whose resources are
 * kept costs about 3-10 µs (its stable view's checks), an instance encoded about 5 µs: a turn
 * stays within about 10 ms (bench/xds-wildcard.ts).
 * One service is never split, so a turn may pass the bound by one service's cost.
 */
export const WILDCARD_UNITS_PER_TURN = 1_000;

/** The resources a wildcard subscription gets: every exposed service with a served instance, as one build found them. */
export interface WildcardSet {
  /** The set's number among its policy's (1, 2, ...): what changed from one to the next is kept a while (`changedSince`). */
  readonly generation: number;
  /** In the order listed: each namespace's services as first listed (sorted), then those that appeared since. */
  readonly entries: readonly ServiceEntry[];
  readonly byName: ReadonlyMap<string, ServiceEntry>;
  /** What the streams sent this set share (the whole list of a type, per visible namespaces), made on first use. */
  readonly shared: Map<string, unknown>;
}

/**
 * How many sets' changes are kept per policy: a stream last sent a set at most this many sets
 * older walks the changes since, not the whole set (every stream of a push is sent each set
 * built for a push; a set built for another stream's request is one more).
 */
export const WILDCARD_HISTORY_SETS = 64;

const NO_NAMES: ReadonlySet<string> = new Set();
/** A set's changes are kept when they are at most an eighth of it, or this many. */
const CHANGES_KEPT_MIN = 1_000;

export type WildcardReady = (set: WildcardSet) => void;
/** Told when the build a waiter waited for failed (an encoding threw): no set comes for it. */
export type WildcardFailed = (error: unknown) => void;

export interface WildcardSetsComponents {
  catalog: {
    listed(namespace: string, service: string, lbPolicy: XdsLbPolicy, regionOf: (zone: string) => string | undefined): ResolvedService;
    regionsOfBuild(): (zone: string) => string | undefined;
    /** A service the store was found not to hold any more (its resources need not be kept). */
    forgetService(namespace: string, service: string): void;
  };
  views: Pick<ServiceViews, 'servicesOf' | 'keyOf'>;
  clock: Pick<Clock, 'setTimeout'>;
  /**
   * Told when a waiter threw (`waiter`: it is a stream's or a push's, the others are still
   * served), or a build threw (`build`: its waiters are told, and the next build starts).
   */
  failed: (error: unknown, what: 'waiter' | 'build') => void;
}

export interface WildcardSetsInit {
  namespaces: readonly string[];
  /** WILDCARD_UNITS_PER_TURN unless a test picks a small bound. */
  unitsPerTurn: number;
}

interface Waiting {
  ready: WildcardReady;
  /** Waiters of the same key wait once for the next build (every push of a window asks). */
  key?: string | undefined;
  failed?: WildcardFailed | undefined;
}

interface Build {
  readonly lbPolicy: XdsLbPolicy;
  /** The policy's last set when it started: what `changed` is counted from. */
  readonly base: WildcardSet | null;
  /** Names whose entry differs from the base's (new, changed, or no longer in the set). */
  readonly changed: Set<string>;
  /** How many of the base's names the walk looked at: those it did not are gone from the set. */
  baseSeen: number;
  /** Where the pass over the base's entries for those is (when the walk did not see them all). */
  sweepAt: number;
  /** How many changes had been announced when it started: it reflects every one of them. */
  readonly startedAtChange: number;
  readonly waiting: Waiting[];
  /** Each exposed namespace's services as listed when it started (a service listed since is looked at too). */
  readonly lists: readonly string[][];
  namespaceIndex: number;
  position: number;
  readonly entries: ServiceEntry[];
  readonly byName: Map<string, ServiceEntry>;
  readonly regionOf: (zone: string) => string | undefined;
  timer: TimerHandle | null;
}

interface History {
  last: WildcardSet | null;
  /** Generation -> the names changed from the one before (none kept for a first set). */
  readonly changes: Map<number, ReadonlySet<string>>;
}

interface Listing {
  /** As the store spelled each service when listed; a build that finds it spelled otherwise now (in case) respells it. */
  services: string[];
  /** The services' identities (ServiceViews.keyOf): a change of one listed already lists nothing. */
  readonly keys: Set<string>;
}

/** The listing is dropped (the store listed again at the next build) once more services changed than it holds, and more than this. */
const FRESH_KEPT_MIN = 10_000;

/**
 * The set a wildcard subscription (state of the world or incremental) gets, built in turns:
 * at most `unitsPerTurn` units of work a turn (the clock's `setTimeout(0)` between them), so
 * that no push or request over 200,000 services holds the event loop for its whole build (16 s
 * in one turn before, in process at 1,000,000 instances). A stream is sent a set once it is
 * complete, never part of one; every stream of a push gets the same set. A set that fits one
 * turn is answered at once, in the caller's turn; a set's waiters are answered one a turn.
 *
 * `when` answers with a set that reflects every change announced (`changed`) before it was
 * called: it joins the build under way when no change came since that build started, and
 * otherwise waits for the next one, which starts when the one under way ends. A change during a
 * build is therefore never lost, and the build under way is not restarted (a flood of changes
 * would starve it).
 *
 * The services looked at are listed once from the store (`servicesOf`, sorted: one turn of
 * about 30 ms at 200,000 services), then kept up to date from the changes: a new service is
 * appended, one the store no longer holds dropped at the next build, one the store spells
 * otherwise now (purged, made again in another case) listed as it is spelled now. A set names
 * each service as the store spells it (catalog.ts).
 */
export class WildcardSets {
  private listings: Map<string, Listing> | null = null;
  /** Per namespace, the services changed since the listing was brought up to date. */
  private readonly fresh = new Map<string, Set<string>>();
  private freshCount = 0;
  /** Per namespace, the identities (`views.keyOf`) of listed services a build found the store no longer holds. */
  private readonly gone = new Map<string, Set<string>>();
  /** The listing dropped for too many changes: compared with the next one, it names the services purged meanwhile. */
  private forgotten: Map<string, Listing> | null = null;
  private changes = 0;
  private readonly running = new Map<XdsLbPolicy, Build>();
  private readonly history = new Map<XdsLbPolicy, History>();
  private readonly next = new Map<XdsLbPolicy, Waiting[]>();
  private readonly deliveries = new Set<TimerHandle>();
  private closed = false;

  constructor(
    private readonly components: WildcardSetsComponents,
    private readonly init: WildcardSetsInit,
  ) {}

  /** A service of an exposed namespace changed: later sets reflect it. */
  changed(namespace: string, service: string): void {
    this.changes += 1;
    const listings = this.listings;
    if (listings === null) return;
    let names = this.fresh.get(namespace);
    if (!names) this.fresh.set(namespace, (names = new Set()));
    if (names.has(service)) return;
    names.add(service);
    this.freshCount += 1;
    // With no build for long (no wildcard stream), listing the store again costs what these would.
    let listed = 0;
    for (const listing of listings.values()) listed += listing.services.length;
    if (this.freshCount > Math.max(FRESH_KEPT_MIN, listed)) this.forgetListing();
  }

  /**
   * Calls `ready` with the set for `lbPolicy` once built, reflecting every change announced
   * before this call: at once when the build fits this turn. With a `key`, a waiter already
   * queued for the next build under the same key stands for this one. When that build fails
   * (an encoding threw), `failed` is called instead; the next build starts as usual.
   */
  when(lbPolicy: XdsLbPolicy, ready: WildcardReady, key?: string, failed?: WildcardFailed): void {
    if (this.closed) return;
    const running = this.running.get(lbPolicy);
    if (running === undefined) {
      this.start(lbPolicy, [{ ready, key, failed }], true);
    } else if (running.startedAtChange === this.changes) {
      running.waiting.push({ ready, key, failed });
    } else {
      let queued = this.next.get(lbPolicy);
      if (!queued) this.next.set(lbPolicy, (queued = []));
      if (key === undefined || !queued.some((waiting) => waiting.key === key)) queued.push({ ready, key, failed });
    }
  }

  /**
   * No stream uses `lbPolicy` any more: its last set is not kept (the next build of it
   * compares nothing, and every stream it answers is new). A build under way still ends.
   */
  forgetPolicy(lbPolicy: XdsLbPolicy): void {
    this.history.delete(lbPolicy);
  }

  /**
   * The names whose resources may differ between the sets `from` and `to` of `lbPolicy` (new,
   * changed or gone); null when that is not known (a first set, or `from` too old): then compare the whole set.
   */
  changedSince(lbPolicy: XdsLbPolicy, from: number, to: number): ReadonlySet<string> | null {
    if (from === to) return NO_NAMES;
    if (from < 1 || from > to || to - from > WILDCARD_HISTORY_SETS) return null;
    const { changes } = this.historyOf(lbPolicy);
    if (to - from === 1) return changes.get(to) ?? null;
    const union = new Set<string>();
    for (let generation = from + 1; generation <= to; generation += 1) {
      const changed = changes.get(generation);
      if (changed === undefined) return null;
      for (const name of changed) union.add(name);
    }
    return union;
  }

  /** Whether a build of `lbPolicy` is under way (tests). */
  building(lbPolicy: XdsLbPolicy): boolean {
    return this.running.has(lbPolicy);
  }

  /** Stops every build; no waiter is answered after this. */
  close(): void {
    this.closed = true;
    for (const build of this.running.values()) build.timer?.cancel();
    for (const timer of this.deliveries) timer.cancel();
    this.deliveries.clear();
    this.running.clear();
    this.next.clear();
  }

  private start(lbPolicy: XdsLbPolicy, waiting: Waiting[], now: boolean): void {
    const base = this.historyOf(lbPolicy).last;
    const build: Build = {
      lbPolicy,
      base,
      changed: new Set(),
      baseSeen: 0,
      sweepAt: base === null ? -1 : 0,
      startedAtChange: this.changes,
      waiting,
      lists: this.listsNow(),
      namespaceIndex: 0,
      position: 0,
      entries: [],
      byName: new Map(),
      regionOf: this.components.catalog.regionsOfBuild(),
      timer: null,
    };
    this.running.set(lbPolicy, build);
    if (now) this.step(build);
    else build.timer = this.components.clock.setTimeout(() => this.step(build), 0);
  }

  /**
   * One turn of a build. Nothing it throws leaves it (a timer's callback: it would end the
   * process): a build that throws ends (`failed`), else it would stay under way and every later
   * wildcard request or push of its policy would wait for it forever (`abort`).
   */
  private step(build: Build): void {
    try {
      this.advance(build);
    } catch (error) {
      this.abort(build, error);
    }
  }

  /** Services until the turn's units are spent, then the next turn, or the end. */
  private advance(build: Build): void {
    build.timer = null;
    const { catalog } = this.components;
    const { base, changed, byName } = build;
    let units = 0;
    while (units < this.init.unitsPerTurn) {
      const services = build.lists[build.namespaceIndex];
      if (services === undefined) {
        // The walk is done; the base's names it did not see are gone from the set.
        if (base === null || build.baseSeen === base.entries.length || build.sweepAt >= base.entries.length) return this.finish(build);
        const { name } = base.entries[build.sweepAt++]!;
        if (!byName.has(name)) changed.add(name);
        units += 1;
        continue;
      }
      if (build.position >= services.length) {
        build.namespaceIndex += 1;
        build.position = 0;
        continue;
      }
      const namespace = this.init.namespaces[build.namespaceIndex]!;
      const service = services[build.position++]!;
      const found = catalog.listed(namespace, service, build.lbPolicy, build.regionOf);
      units += found.cost;
      if (!found.stored) this.goneIn(namespace).add(this.components.views.keyOf(namespace, service));
      // Purged and made again in another case (no change says so): listed as the store spells it now.
      else if (found.service !== undefined && found.service !== service) services[build.position - 1] = found.service;
      const { name, entry } = found;
      if (name === null || byName.has(name)) continue;
      const before = base?.byName.get(name);
      if (before !== undefined) build.baseSeen += 1;
      if (before !== (entry ?? undefined)) changed.add(name);
      if (entry !== null) {
        build.entries.push(entry);
        byName.set(name, entry);
      }
    }
    build.timer = this.components.clock.setTimeout(() => this.step(build), 0);
  }

  /** Ends a build that threw: logged, its waiters told, and the next build started. */
  private abort(build: Build, error: unknown): void {
    build.timer?.cancel();
    build.timer = null;
    if (this.running.get(build.lbPolicy) === build) this.running.delete(build.lbPolicy);
    this.report(error, 'build');
    for (const waiting of build.waiting) {
      try {
        waiting.failed?.(error);
      } catch (thrown) {
        this.report(thrown, 'waiter');
      }
    }
    const queued = this.next.get(build.lbPolicy);
    if (queued && !this.closed && !this.running.has(build.lbPolicy)) {
      this.next.delete(build.lbPolicy);
      this.start(build.lbPolicy, queued, false);
    }
  }

  /** Tells `failed` of an error; nothing escapes (the callers are timers' callbacks). */
  private report(error: unknown, what: 'waiter' | 'build'): void {
    try {
      this.components.failed(error, what);
    } catch {
      // The logger itself threw: nothing more can be said.
    }
  }

  private finish(build: Build): void {
    this.running.delete(build.lbPolicy);
    const history = this.historyOf(build.lbPolicy);
    let set: WildcardSet;
    if (build.base !== null && build.changed.size === 0 && history.last === build.base) {
      // Nothing differs from the last set: it is the answer. Streams hold the set they were
      // sent (held-versions.ts), and one set per stream that asked while nothing changed held
      // 15-20 MB each at 200,000 services (its lists, and the lists shared through it).
      set = build.base;
    } else {
      const generation = (build.base?.generation ?? 0) + 1;
      set = { generation, entries: build.entries, byName: build.byName, shared: new Map() };
      history.last = set;
      // Many changes are not worth keeping: comparing the whole set costs about as much.
      if (build.base !== null && build.changed.size <= Math.max(CHANGES_KEPT_MIN, set.entries.length / 8)) history.changes.set(generation, build.changed);
      history.changes.delete(generation - WILDCARD_HISTORY_SETS);
    }
    const queued = this.next.get(build.lbPolicy);
    if (queued) {
      this.next.delete(build.lbPolicy);
      // Its first turn is a turn of its own: this one delivers the set just built.
      this.start(build.lbPolicy, queued, false);
    }
    this.deliver(set, build.waiting, 0);
  }

  /**
   * Calls the waiters of a set, one a turn: each may write a response of the whole set (a
   * stream's first answer: about 1 s for 200,000 services' Clusters and assignments), and ten
   * Envoys connecting at once would otherwise all be answered in one turn.
   */
  private deliver(set: WildcardSet, waiting: readonly Waiting[], index: number): void {
    if (this.closed) return;
    try {
      waiting[index]!.ready(set);
    } catch (error) {
      this.report(error, 'waiter');
    }
    if (index + 1 >= waiting.length) return;
    const timer = this.components.clock.setTimeout(() => {
      this.deliveries.delete(timer);
      this.deliver(set, waiting, index + 1);
    }, 0);
    this.deliveries.add(timer);
  }

  /** Each exposed namespace's services, the listing brought up to date: gone ones dropped, new ones appended. */
  private listsNow(): string[][] {
    const { views } = this.components;
    let listings = this.listings;
    if (listings === null) {
      listings = new Map();
      for (const namespace of this.init.namespaces) {
        // A copy: the listing grows in place, and the views may share the array they answer.
        const services = [...views.servicesOf(namespace)];
        listings.set(namespace, { services, keys: new Set(services.map((service) => views.keyOf(namespace, service))) });
      }
      this.listings = listings;
      this.fresh.clear();
      this.freshCount = 0;
      this.gone.clear();
      this.forgetPurged(listings);
    }
    for (const [namespace, listing] of listings) {
      const gone = this.gone.get(namespace);
      if (gone !== undefined && gone.size > 0) {
        listing.services = listing.services.filter((service) => !gone.has(views.keyOf(namespace, service)));
        for (const key of gone) listing.keys.delete(key);
        gone.clear();
      }
      // A new service is listed as its first change spells it, which is how the store keeps it.
      for (const service of this.fresh.get(namespace) ?? []) {
        const key = views.keyOf(namespace, service);
        if (listing.keys.has(key)) continue;
        listing.keys.add(key);
        listing.services.push(service);
      }
    }
    this.fresh.clear();
    this.freshCount = 0;
    return this.init.namespaces.map((namespace) => listings.get(namespace)!.services);
  }

  private historyOf(lbPolicy: XdsLbPolicy): History {
    let history = this.history.get(lbPolicy);
    if (!history) this.history.set(lbPolicy, (history = { last: null, changes: new Map() }));
    return history;
  }

  private goneIn(namespace: string): Set<string> {
    let gone = this.gone.get(namespace);
    if (!gone) this.gone.set(namespace, (gone = new Set()));
    return gone;
  }

  /**
   * The services of the listing dropped for too many changes that the store no longer holds:
   * purged meanwhile (not announced), no build looks at them again, so their kept resources go.
   */
  private forgetPurged(listings: ReadonlyMap<string, Listing>): void {
    const forgotten = this.forgotten;
    if (forgotten === null) return;
    this.forgotten = null;
    for (const [namespace, old] of forgotten) {
      const now = listings.get(namespace)?.keys;
      for (const service of old.services) if (!now?.has(this.components.views.keyOf(namespace, service))) this.components.catalog.forgetService(namespace, service);
    }
  }

  private forgetListing(): void {
    this.forgotten = this.listings;
    this.listings = null;
    this.fresh.clear();
    this.freshCount = 0;
    this.gone.clear();
  }
}
