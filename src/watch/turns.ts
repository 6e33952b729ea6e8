import type { Clock, TimerHandle } from '../clock/clock.js';

/**
 * Units of work one turn of the event loop spends on the subscriptions' queued work (wildcard
 * snapshots, a closed subscriber leaving its channels), all subscriptions together. A unit is
 * about one instance of a snapshot built, encoded and written (`SNAPSHOT_SERVICE_UNITS` and
 * `DETACH_UNITS` in snapshots.ts price the rest): a turn of 1,000 units took 7.8 ms (median) at
 * 1,000,000 instances (bench/watch-wildcard.ts), inside the heartbeats' 20 ms p99. Counted, not
 * timed, so that a turn's work is the same in a test as in production. Fewer units make a large
 * watch's snapshots take more turns (each at least a zero-delay timer, 1 ms in Node).
 */
export const TURN_UNITS = 1_000;

/**
 * Units one subscription spends per visit within a turn, so that subscriptions waiting
 * together share each turn round robin rather than each waiting for the one ahead to finish.
 */
export const PIECE_UNITS = 250;

/** Work done a piece at a time, in steps of known cost. */
export interface TurnJob {
  /** What the next step costs, in units (one service's snapshot, never split, is one step). */
  readonly nextUnits: number;
  /** Does the next step, then more while they fit in `units`; returns the units it spent. */
  run(units: number): number;
  /** Nothing is left to do (or the subscription ended). */
  readonly done: boolean;
}

/**
 * Work of watch subscriptions that is proportional to a namespace, not to a request, done a
 * bounded amount per turn of the event loop (a zero-delay timer on the injected clock, as
 * fan-out.ts does): `TURN_UNITS` per turn for every queued job together, `PIECE_UNITS` per job
 * per visit, round robin. A job's first piece runs at once, in its caller's turn (a request's
 * own bounded share: a small subscription is served whole, at once, as before).
 */
export class Turns {
  /** Jobs with work left, in the order they get their next piece (a Set keeps insertion order). */
  private readonly waiting = new Set<TurnJob>();
  private timer: TimerHandle | undefined;
  /** Within a turn: a job started now joins the queue rather than adding a piece to the turn. */
  private inTurn = false;

  constructor(
    private readonly clock: Pick<Clock, 'setTimeout'>,
    private readonly init: { turnUnits: number; pieceUnits: number } = { turnUnits: TURN_UNITS, pieceUnits: PIECE_UNITS },
  ) {}

  /** Runs the job's first piece now (one turn's units, at least one step) and queues what is left. */
  start(job: TurnJob): void {
    if (!this.inTurn) job.run(this.init.turnUnits);
    this.queue(job);
  }

  /** Drops a job's remaining work; with nothing else queued, no timer is left. */
  cancel(job: TurnJob): void {
    this.waiting.delete(job);
    if (this.waiting.size === 0) this.stop();
  }

  /** Drops every job (shutdown). */
  clear(): void {
    this.waiting.clear();
    this.stop();
  }

  /** Jobs with work left. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Queues a job (again) for the coming turns, unless it is done. */
  queue(job: TurnJob): void {
    if (job.done) return;
    this.waiting.add(job);
    this.timer ??= this.clock.setTimeout(() => this.turn(), 0);
  }

  private stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private turn(): void {
    this.timer = undefined;
    this.inTurn = true;
    let spent = 0;
    try {
      // A job given a piece that still has work goes to the back of the queue; the loop reaches
      // it again (a Set's iteration visits what is added meanwhile) once the others had theirs.
      for (const job of this.waiting) {
        if (job.done) {
          this.waiting.delete(job);
          continue;
        }
        // A step bigger than a whole turn goes alone, in a turn of its own.
        if (spent > 0 && spent + job.nextUnits > this.init.turnUnits) break;
        this.waiting.delete(job);
        spent += Math.max(1, job.run(Math.min(this.init.pieceUnits, this.init.turnUnits - spent)));
        if (!job.done) this.waiting.add(job);
      }
    } finally {
      this.inTurn = false;
      if (this.waiting.size > 0) this.timer ??= this.clock.setTimeout(() => this.turn(), 0);
    }
  }
}
