import type { Clock, TimerHandle } from '../clock/clock.js';
import type { StoreReader } from '../app/reads.js';
import type { StoreChange } from '../registry/store.js';
import { instanceKeyString, type InstanceRecord, type StoredInstance } from '../registry/types.js';
import { isServed, type LeaseView } from '../registry/visibility.js';
import type { ActionType } from './instance-view.js';

/** The last change of one instance within the window. */
export interface RecentChange {
  atMs: number;
  /** The record as it was right after the change (a deleted one keeps its last data). */
  record: InstanceRecord;
  action: ActionType;
}

export interface RecentChangesComponents {
  clock: Clock;
  store: StoreReader;
  leaseView: () => LeaseView;
}

export interface RecentChangesInit {
  /** How far back a delta reaches (`cluster.eurekaDeltaWindowMs`). */
  windowMs: number;
  /** Only this namespace's changes are kept (the one the Eureka API serves, `security.eurekaNamespace`). */
  namespace: string;
  /** Tests: `REBASE_EARLY_MAX_ENTRIES` otherwise. */
  rebaseEarlyMaxEntries?: number;
}

/**
 * How long a window started by a Eureka read (`demand`) is kept once no Eureka read comes, in
 * windows: clients that fetch deltas read every 30 s by default, so a window left this long
 * has no client left to serve.
 */
export const IDLE_WINDOWS = 2;

/**
 * The hash code a delta carries while the window has not yet recorded for a whole window (it
 * started less than `windowMs` ago: the peer's first Eureka read, or a restart). A status with
 * a count of 0, which no client's copy can hash to (a copy counts the statuses it holds), so
 * every client that applies such a delta fetches the whole registry. With the hash code of the
 * registry instead, a client whose last fetch was from another peer, or from this one before
 * it restarted, missed the changes made since then and before the window began, and kept that
 * copy wherever those changes left the count of each status as it was (an instance replaced by
 * another, a port or metadata changed).
 */
export const PARTIAL_WINDOW_HASH_CODE = 'PARTIAL_DELTA_WINDOW_0_';

/**
 * The window `GET /eureka/apps/delta` answers from: the last change of every instance that
 * changed within `windowMs`, fed by the store's change feed, so replicated writes and local
 * visibility changes (an owner down, a lease revived) count as much as writes made here.
 * One entry per instance (a newer change replaces the older), kept in time order, so memory
 * is bounded by the number of instances that changed in the window and pruning is O(1) each
 * (amortised; done in pieces of at most `PRUNE_SLICE_ENTRIES`).
 *
 * Entries are keyed by the record they hold, not by a key string: every change names the
 * record it replaces (`before`, the record itself for a local change), so the older entry is
 * found without building a `namespace/service/instanceId` string per instance (right after
 * 100,000 registrations the window holds 100,000 entries; such strings cost about 9 MB).
 * The one way to lose that link is a purge (an expired tombstone, and the next register of
 * the same instance then names no `before`): purged records still in the window are indexed
 * by key string in `purgedInWindow`, which is empty unless tombstones expire within the window.
 */
/** The actions, by their code in a packed change (`offsetMs * ACTION_CODES + code`). */
const ACTIONS: readonly ActionType[] = ['ADDED', 'MODIFIED', 'DELETED'];
const ACTION_CODES = 4;

/**
 * The largest offset from the window's origin, in ms, that a packed change holds (about 3.1
 * days): `offsetMs * ACTION_CODES + code` then stays within 2^30, a small integer that V8 keeps
 * in the map's own table (31 bits where pointers are compressed, 32 where not, as here). An
 * epoch-ms time packed the same way is a 16-byte box per entry: 16 MB right after 1,000,000
 * registrations.
 */
export const OFFSET_LIMIT_MS = Math.floor((2 ** 30 - 1) / ACTION_CODES) - 1;

/** The action code of a packed change (its offset may be negative: after a rebase, or a clock set back). */
function codeOf(packed: number): number {
  return packed - Math.floor(packed / ACTION_CODES) * ACTION_CODES;
}

/**
 * Past this offset the origin moves to the present at the next change, when the window holds
 * at most `rebaseEarlyMaxEntries` entries (each one rewritten); a window fuller than that waits
 * until `OFFSET_LIMIT_MS`, where it moves whatever the size. So the rewrite, one pass over the
 * window, comes once every day and a half and almost always over a small window.
 */
export const REBASE_AFTER_MS = 2 ** 27;
/** Entries the window may hold for its origin to move before `OFFSET_LIMIT_MS` forces it. */
export const REBASE_EARLY_MAX_ENTRIES = 10_000;

/**
 * Most entries one prune drops before it lets the caller go on (a change, a read of the
 * window). A million registrations in one window leave a million entries that fall out of it
 * together; dropped in one piece, that is one turn of the event loop proportional to the
 * registry, which every heartbeat arriving meanwhile waits for. What is left is dropped in later pieces, one per change and one per turn of the
 * clock's timers (`setTimeout(0)`) until the window is clean; reads skip what is out of the
 * window meanwhile, so nothing they see changes.
 */
export const PRUNE_SLICE_ENTRIES = 1_000;

export class RecentChanges {
  /**
   * Record to its change packed in one small integer, `offsetMs * ACTION_CODES + action code`
   * with `offsetMs` from `originMs` (see `OFFSET_LIMIT_MS`), so that an entry costs the map's
   * own slots and no object or boxed number; `changes()` builds the objects when asked.
   */
  private readonly byRecord = new Map<InstanceRecord, number>();
  /** Epoch ms that offset 0 stands for: the time of the first change, moved by `rebase`. */
  private originMs: number | undefined;
  /** Key string to record, for records purged from the store while their entry is in the window. */
  private readonly purgedInWindow = new Map<string, InstanceRecord>();
  private unsubscribe: (() => void)[] = [];
  /** The next piece of a prune that stopped at `PRUNE_SLICE_ENTRIES`, while one is due. */
  private pruneLater: TimerHandle | undefined;
  /** The last Eureka read (`demand`), and the timer that stops a window no one reads. */
  private lastDemandMs = 0;
  private idleCheck: TimerHandle | undefined;
  /** When the window last started recording; undefined while it is not. */
  private recordingSinceMs: number | undefined;

  constructor(
    private readonly components: RecentChangesComponents,
    private readonly init: RecentChangesInit,
  ) {}

  start(): void {
    if (this.unsubscribe.length > 0) return;
    const { store, clock } = this.components;
    this.recordingSinceMs = clock.nowMs();
    this.unsubscribe = [store.onChange((change) => this.record(change)), store.onPurge((purged) => this.purged(purged))];
  }

  /** Whether the window has recorded for a whole `windowMs` (else its deltas carry `PARTIAL_WINDOW_HASH_CODE`). */
  get whole(): boolean {
    return this.recordingSinceMs !== undefined && this.components.clock.nowMs() - this.recordingSinceMs >= this.init.windowMs;
  }

  stop(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    this.unsubscribe = [];
    this.pruneLater?.cancel();
    this.pruneLater = undefined;
    this.idleCheck?.cancel();
    this.idleCheck = undefined;
    this.recordingSinceMs = undefined;
  }

  /**
   * A Eureka client read the registry: the window starts recording if it was not (it then holds
   * the changes from this read on, all a client that fetched here needs), and is stopped and
   * emptied once no read has come for `IDLE_WINDOWS` windows. A peer no Eureka client reads so
   * keeps no window: one entry per instance changed in the last three minutes, all 1,000,000 of
   * them after a join or a restart (37 MB), and its work on every write. Until the window has
   * recorded for a whole window, a delta may miss what a client needs (its first read here may
   * be a delta, its last fetch from another peer): such deltas carry `PARTIAL_WINDOW_HASH_CODE`,
   * and clients fetch everything (docs/eureka.md).
   */
  demand(): void {
    const { clock } = this.components;
    this.lastDemandMs = clock.nowMs();
    if (this.unsubscribe.length > 0) return;
    this.start();
    const idleMs = IDLE_WINDOWS * this.init.windowMs;
    const check = (): void => {
      const idleForMs = clock.nowMs() - this.lastDemandMs;
      if (idleForMs < idleMs) {
        this.idleCheck = clock.setTimeout(check, idleMs - idleForMs);
        return;
      }
      this.stop();
      this.byRecord.clear();
      this.purgedInWindow.clear();
      this.originMs = undefined;
    };
    this.idleCheck = clock.setTimeout(check, idleMs);
  }

  /** Every change still in the window, oldest first. */
  changes(): RecentChange[] {
    return [...this.entries()];
  }

  /**
   * Every change in the window, oldest first, one at a time, so that a reader may stop between
   * two and yield to the event loop (the delta document is built so). The window is the one of
   * the call: entries older than it are skipped, whatever the prune has dropped yet. A change
   * made while a reader is suspended moves its instance to the end: a reader that has passed
   * it then meets the instance a second time, later in time order (docs/eureka.md). A reader
   * meets at most twice the entries held when it started, so that writes arriving faster than
   * it reads cannot keep it going forever; what it leaves is in the next read.
   */
  *entries(): Generator<RecentChange> {
    const nowMs = this.components.clock.nowMs();
    const oldestMs = nowMs - this.init.windowMs;
    this.prune(nowMs);
    let left = 2 * this.byRecord.size;
    for (const [record, packed] of this.byRecord) {
      if (left-- === 0) return;
      const atMs = this.atMsOf(packed);
      if (atMs <= oldestMs) continue;
      yield { atMs, record, action: ACTIONS[codeOf(packed)]! };
    }
  }

  /** Entries held, those out of the window not yet pruned included. */
  get size(): number {
    return this.byRecord.size;
  }

  private record(change: StoreChange): void {
    const { entry } = change;
    if (entry.record.namespace !== this.init.namespace) return;
    const visibleNow = isServed(entry, this.components.leaseView());
    // A write replaces the record: it was visible if it existed undeleted. A local change is
    // announced only when visibility flipped.
    const visibleBefore =
      change.kind === 'write' ? change.before !== null && change.before.deleted === null : !visibleNow;
    const action: ActionType = !visibleNow ? 'DELETED' : visibleBefore ? 'MODIFIED' : 'ADDED';
    const nowMs = this.components.clock.nowMs();
    // Delete first so that the entry moves to the end: the map stays in time order.
    if (change.before !== null) this.byRecord.delete(change.before);
    else if (this.purgedInWindow.size > 0) this.forgetPurged(instanceKeyString(entry.record));
    this.byRecord.set(entry.record, this.offsetOf(nowMs) * ACTION_CODES + ACTIONS.indexOf(action));
    this.prune(nowMs);
  }

  private atMsOf(packed: number): number {
    return this.originMs! + Math.floor(packed / ACTION_CODES);
  }

  /** `nowMs` as an offset from the origin, after moving the origin when it is due. */
  private offsetOf(nowMs: number): number {
    if (this.originMs === undefined) this.originMs = nowMs;
    const offsetMs = nowMs - this.originMs;
    const due = Math.abs(offsetMs) > OFFSET_LIMIT_MS || (offsetMs > REBASE_AFTER_MS && this.byRecord.size <= (this.init.rebaseEarlyMaxEntries ?? REBASE_EARLY_MAX_ENTRIES));
    if (!due) return offsetMs;
    this.rebase(nowMs);
    return 0;
  }

  /**
   * Moves the origin to `nowMs`, rewriting every entry against it (setting a key that is in a
   * map keeps its place, so time order holds). An entry out of the window, or out of reach of
   * the new origin (the clock went back by days), is dropped.
   */
  private rebase(nowMs: number): void {
    const oldestMs = nowMs - this.init.windowMs;
    for (const [record, packed] of this.byRecord) {
      const atMs = this.atMsOf(packed);
      const offsetMs = atMs - nowMs;
      if (atMs <= oldestMs || Math.abs(offsetMs) > OFFSET_LIMIT_MS) {
        this.drop(record);
        continue;
      }
      this.byRecord.set(record, offsetMs * ACTION_CODES + codeOf(packed));
    }
    this.originMs = nowMs;
  }

  private purged(purged: StoredInstance): void {
    if (this.byRecord.has(purged.record)) this.purgedInWindow.set(instanceKeyString(purged.record), purged.record);
  }

  private forgetPurged(key: string): void {
    const record = this.purgedInWindow.get(key);
    if (record === undefined) return;
    this.purgedInWindow.delete(key);
    this.byRecord.delete(record);
  }

  /**
   * Drops at most `PRUNE_SLICE_ENTRIES` entries out of the window; when more are left, the next
   * piece runs on the clock's next timer turn (one at a time).
   */
  private prune(nowMs: number): void {
    const oldestMs = nowMs - this.init.windowMs;
    let dropped = 0;
    for (const [record, packed] of this.byRecord) {
      if (this.atMsOf(packed) > oldestMs) break;
      if (dropped === PRUNE_SLICE_ENTRIES) {
        this.prunePending();
        return;
      }
      dropped += 1;
      this.drop(record);
    }
  }

  private drop(record: InstanceRecord): void {
    this.byRecord.delete(record);
    if (this.purgedInWindow.size > 0 && record.deleted !== null) {
      const key = instanceKeyString(record);
      if (this.purgedInWindow.get(key) === record) this.purgedInWindow.delete(key);
    }
  }

  private prunePending(): void {
    if (this.pruneLater !== undefined || this.unsubscribe.length === 0) return;
    const { clock } = this.components;
    this.pruneLater = clock.setTimeout(() => {
      this.pruneLater = undefined;
      this.prune(clock.nowMs());
    }, 0);
  }
}
