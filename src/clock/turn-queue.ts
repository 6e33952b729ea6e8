/**
 * Gives concurrent tasks' steps a turn of the event loop each, one after the other. Tasks that
 * wait on the network between steps (a round's reconcile parts in flight, the answers of
 * several peers) resume together when their answers or timers come due in the same phase of
 * the loop, and would then run their steps back to back in one turn: each `next()` resolves on
 * a turn of its own (`yieldTurn`, after the one before it), so a step that follows it holds the
 * loop for itself alone.
 */
export class TurnQueue {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly yieldTurn: () => Promise<void>) {}

  /** Resolves on a later turn than every `next()` before it. */
  next(): Promise<void> {
    const turn = this.tail.then(this.yieldTurn);
    this.tail = turn;
    return turn;
  }
}
