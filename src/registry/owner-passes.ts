import type { Clock, TimerHandle } from '../clock/clock.js';
import type { InstanceStore } from './store.js';
import { StoreWalk } from './store-walk.js';
import type { StoredInstance } from './types.js';
import type { PeerLiveness } from './visibility.js';

/**
 * Entries an owner pass visits per turn of the event loop. A turn of 20,000 takes about 1 to 3
 * ms (`npx tsx bench/registry-passes.ts`: the whole pass over 1,000,000 took 40-115 ms in one
 * turn), so a heartbeat never waits behind more than that, and a pass over 1,000,000 ends
 * after 50 turns.
 */
export const OWNER_PASS_SLICE_ENTRIES = 20_000;

export interface OwnerPassComponents {
  clock: Clock;
  store: InstanceStore;
  /** Until when a down owner's instance stays served here, its owner seen down at `nowMs`. */
  graceUntilMs(entry: StoredInstance, nowMs: number): number;
  /** Told when a pass ends (not when it is cut short): how many instances it changed. */
  ended(owner: string, down: boolean, changed: number): void;
}

interface OwnerPass {
  readonly owner: string;
  readonly down: boolean;
  /** Whether it shows what is hidden of the owner's: an up pass, or a down pass that cut one short. */
  readonly unhide: boolean;
  /** When the owner was seen down (a down pass): its instances' grace counts from then. */
  readonly nowMs: number;
  readonly walk: StoreWalk;
  changed: number;
  next: TimerHandle | undefined;
}

/**
 * What this peer does to the instances of an owner that goes down (one grace lease each) or
 * comes back (what was hidden for its sake is shown again): one pass over the whole store,
 * cut into turns of `sliceEntries` so that no heartbeat waits behind all of it.
 *
 * While a down pass runs, the owner is still up to this peer's readers and reaper (`liveness`,
 * `graceUnderway`): their instances stay served as they were, and none is hidden, before the
 * pass has given each its grace; to them, the owner goes down when the pass ends, a few
 * milliseconds later than membership said, as if its suspicion had lasted that much longer.
 * An instance of the owner written meanwhile behind the pass gets the same grace from the
 * write itself: membership holds the owner down, and that is what a replicated write asks
 * (`remoteLease`). An up pass needs no such cover: an instance it has not reached yet stays
 * hidden a few milliseconds longer, as if the owner had answered that much later.
 *
 * A pass for an owner cuts short the one still running for it; a down pass that cuts an up
 * pass short also shows what that one had not shown yet (as if both had run whole).
 */
export class OwnerPasses {
  private readonly passes = new Map<string, OwnerPass>();
  /** Owners whose down pass is running: asked on every read of a foreign instance, so a Set of its own. */
  private readonly gracing = new Set<string>();

  constructor(
    private readonly components: OwnerPassComponents,
    private readonly sliceEntries = OWNER_PASS_SLICE_ENTRIES,
  ) {}

  down(owner: string): void {
    this.start(owner, true);
  }

  up(owner: string): void {
    this.start(owner, false);
  }

  /** True while `owner`'s down pass runs: until it ends the owner counts as up here. */
  graceUnderway(owner: string): boolean {
    return this.gracing.size !== 0 && this.gracing.has(owner);
  }

  /** Runs every pass to its end now, in this turn (the peer stops). */
  finishAll(): void {
    for (const pass of [...this.passes.values()]) {
      pass.next?.cancel();
      this.run(pass, Number.POSITIVE_INFINITY);
    }
  }

  /** `inner` as this peer's readers see it: an owner whose down pass runs is still up. */
  liveness(inner: PeerLiveness): PeerLiveness {
    const view: PeerLiveness = { isUp: (peerId) => this.graceUnderway(peerId) || inner.isUp(peerId) };
    // Only those `inner` has: an absent one means something of its own (see PeerLiveness).
    if (inner.allUpSinceMs) view.allUpSinceMs = inner.allUpSinceMs.bind(inner);
    if (inner.heldDown) view.heldDown = inner.heldDown.bind(inner);
    if (inner.othersUp) view.othersUp = inner.othersUp.bind(inner);
    return view;
  }

  private start(owner: string, down: boolean): void {
    const cut = this.passes.get(owner);
    cut?.next?.cancel();
    const pass: OwnerPass = {
      owner,
      down,
      unhide: !down || cut?.unhide === true,
      nowMs: this.components.clock.nowMs(),
      walk: new StoreWalk(this.components.store.allServices()),
      changed: 0,
      next: undefined,
    };
    this.passes.set(owner, pass);
    if (down) this.gracing.add(owner);
    else this.gracing.delete(owner);
    this.run(pass, this.sliceEntries);
  }

  private run(pass: OwnerPass, maxEntries: number): void {
    if (this.passes.get(pass.owner) !== pass) return;
    pass.next = undefined;
    if (!pass.walk.step(maxEntries, (entry) => this.visit(pass, entry))) {
      pass.next = this.components.clock.setTimeout(() => this.run(pass, this.sliceEntries), 0);
      return;
    }
    this.passes.delete(pass.owner);
    this.gracing.delete(pass.owner);
    this.components.ended(pass.owner, pass.down, pass.changed);
  }

  private visit(pass: OwnerPass, entry: StoredInstance): void {
    const { record } = entry;
    if (record.owner !== pass.owner) return;
    const { store } = this.components;
    if (pass.down) {
      if (record.deleted !== null) return;
      const leaseExpiresAtMs = this.components.graceUntilMs(entry, pass.nowMs);
      if (pass.unhide && entry.hidden) store.updateLease(entry, { leaseExpiresAtMs, hidden: false }, true);
      else store.updateLease(entry, { leaseExpiresAtMs }, false);
      pass.changed += 1;
    } else if (entry.hidden) {
      store.updateLease(entry, { hidden: false }, true);
      pass.changed += 1;
    }
  }
}
