/**
 * How many resource names each principal's ADS streams subscribe to together. A name costs
 * memory for as long as its stream lives and a look-up on every push and request, and one
 * stream holds at most MAX_RESOURCE_NAMES: without a share per principal, one client opening
 * many streams (100 streams of 10,000 names took +259 MB, issue 33) could make the peer hold
 * millions. Counts only: no I/O, no time.
 */
export class NameShares {
  /** Names held per owner (`token:NAME` or `address:IP`); an owner is dropped at zero. */
  private readonly byOwner = new Map<string, number>();

  constructor(readonly maxPerOwner: number) {}

  /** Moves `owner`'s count by `delta` (negative frees); false, and nothing changes, when it would pass the cap. */
  resize(owner: string, delta: number): boolean {
    const held = this.byOwner.get(owner) ?? 0;
    const next = held + delta;
    if (delta > 0 && next > this.maxPerOwner) return false;
    if (next > 0) this.byOwner.set(owner, next);
    else this.byOwner.delete(owner);
    return true;
  }

  /** Names `owner` holds now. */
  heldBy(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }
}
