/**
 * What a chaos run records: the clients' operations as they saw them, the peers' lives, the
 * faults, what each peer served when it was polled, and the final rounds after the last heal.
 * Plain data (JSON), no I/O: the checker (checker.ts) judges it, and a failing run prints it.
 * Times are epoch milliseconds on the one machine every process runs on.
 */

export type OpKind = 'register' | 'heartbeat' | 'status' | 'cancel';

/**
 * How an operation ended, from the client's side:
 * - `ok`: a 2xx answer (acknowledged);
 * - `not-found`: 404, the peer does not know the instance;
 * - `failed`: no answer (refused, reset, timed out), a 5xx, or any other status: for a write,
 *   whether it took effect is unknown.
 */
export type OpOutcome = 'ok' | 'not-found' | 'failed';

export interface ClientOp {
  kind: OpKind;
  /** `service/instanceId`; instance ids are never reused, so a key has one life. */
  key: string;
  peer: string;
  /** The incarnation of `peer` the call was sent to (see PeerRun). */
  incarnation: number;
  sentAtMs: number;
  doneAtMs: number;
  outcome: OpOutcome;
  httpStatus?: number;
  error?: string;
  /** The version the peer answered (register, status, cancel). */
  version?: string;
  /** register: the lease asked for. */
  leaseDurationMs?: number;
  /** status: the status set. */
  status?: string;
}

/** One life of one peer process, from its start to its end. */
export interface PeerRun {
  peer: string;
  /** Counts the starts of this peer, from 1. */
  incarnation: number;
  startedAtMs: number;
  /** When `/readyz` first answered 200; null if it never did. */
  readyAtMs: number | null;
  /** When the process ended; null while it ran until the end of the run. */
  endedAtMs: number | null;
  /** kill: SIGKILLed by the nemesis; stop: stopped at the end of the run; crash: exited by itself. */
  endedBy: 'kill' | 'stop' | 'crash' | null;
  /** What it found on disk at start (see RealCluster's DataDirUse). */
  dataDir: 'keep' | 'wipe' | 'none';
}

export type FaultKind = 'partition' | 'one-way' | 'delay' | 'drop' | 'flap' | 'kill';

/** One fault, from when it was injected to when it was healed (or the killed peer restarted). */
export interface FaultInterval {
  kind: FaultKind;
  startedAtMs: number;
  endedAtMs: number;
  /** partition: the sides (every peer on exactly one). */
  sides?: string[][];
  /** one-way, delay, drop, flap: the directed links (`from->to`) affected. */
  links?: string[];
  /** kill: the peer. */
  peer?: string;
  /** Human-readable detail (delay in ms, drop ratio, flap period, restart with or without data dir). */
  detail: string;
}

/** One instance as a peer served it in a poll. */
export interface ServedInstance {
  version: string;
  status: string;
  /** Kept by an eviction guard past its lease (`evictionHeld`). */
  held: boolean;
}

/**
 * One poll of one peer (every service the workload uses, `?status=all`), stored as the change
 * from the previous poll of the same peer incarnation: `null` means the instance is no longer
 * served. The first poll of an incarnation lists everything it served. Storing changes keeps a
 * 30-minute history small; `servedStates` rebuilds the full picture.
 */
export interface Observation {
  peer: string;
  incarnation: number;
  /** The poll round (all peers are polled together in one round). */
  round: number;
  sentAtMs: number;
  doneAtMs: number;
  changes: Record<string, ServedInstance | null>;
}

/** One round of full reads of every peer after the last heal. */
export interface FinalRound {
  atMs: number;
  doneAtMs: number;
  /** peer -> key -> version; a peer that did not answer is missing. */
  perPeer: Record<string, Record<string, string>>;
}

export interface FinalPhase {
  /** When the last fault was healed and every peer was up and ready again. */
  lastHealAtMs: number;
  /** When clients stopped every write but heartbeats (re-registers after a 404 go on). */
  quiescedAtMs: number;
  rounds: FinalRound[];
}

/** Settings the checker judges by, recorded with the history. */
export interface CheckSettings {
  /** Every peer must serve the same set within this time after the last heal. */
  convergenceTargetMs: number;
  /**
   * Taken off every lease when deciding whether a client kept its instance alive, so that
   * only certain cases count (timer granularity; the reaper's interval only makes it later).
   */
  leaseSlackMs: number;
  /** A registration acknowledged this recently before a final round may not have reached every peer yet. */
  replicationAllowanceMs: number;
  /**
   * How long a (re)started peer may take to get ready when no peer answers its start-up sync:
   * it asks each other peer in turn, each call bounded by the peer call timeout, then starts
   * alone (src/replication/bootstrap.ts). A partition side whose peers had all started less
   * than this before the partition ended, and were not ready yet, had no peer that could
   * serve: it is counted, not judged. Absent in older histories (then every side is judged).
   */
  startupAllowanceMs?: number;
  /**
   * The peers' `cluster.replicationBatchDelayMs`: a replication batch leaves its peer that long
   * after the write that opens it. A peer killed sooner than that after a write was sent, with
   * no other write of its own just before, had sent it nowhere. Absent in older histories.
   */
  replicationBatchDelayMs?: number;
}

export interface History {
  seed: number;
  peers: string[];
  startedAtMs: number;
  endedAtMs: number;
  settings: CheckSettings;
  ops: ClientOp[];
  /** Instances whose client stopped heartbeating on purpose (a crashed client), and when. */
  abandoned: { key: string; atMs: number }[];
  runs: PeerRun[];
  faults: FaultInterval[];
  observations: Observation[];
  final: FinalPhase;
}

/** A poll's full state: what one peer incarnation served, rebuilt from the stored changes. */
export interface ServedState {
  observation: Observation;
  served: ReadonlyMap<string, ServedInstance>;
  /** Keys this poll found gone that the previous poll of the same incarnation served, with that poll. */
  vanished: { key: string; last: ServedInstance; previous: Observation }[];
}

/**
 * Replays the observations of each peer incarnation in order and calls `visit` with the full
 * served state after each poll. Pure.
 */
export function replayObservations(observations: readonly Observation[], visit: (state: ServedState) => void): void {
  const byIncarnation = new Map<string, Observation[]>();
  for (const observation of observations) {
    const id = `${observation.peer}#${observation.incarnation}`;
    const list = byIncarnation.get(id) ?? [];
    list.push(observation);
    byIncarnation.set(id, list);
  }
  for (const list of byIncarnation.values()) {
    list.sort((a, b) => a.sentAtMs - b.sentAtMs);
    const served = new Map<string, ServedInstance>();
    let previous: Observation | undefined;
    for (const observation of list) {
      const vanished: ServedState['vanished'] = [];
      for (const [key, change] of Object.entries(observation.changes)) {
        const last = served.get(key);
        if (change === null) {
          if (last && previous) vanished.push({ key, last, previous });
          served.delete(key);
        } else {
          served.set(key, change);
        }
      }
      visit({ observation, served, vanished });
      previous = observation;
    }
  }
}

/** The change between two full states of one peer, as an observation stores it. */
export function diffServed(
  before: ReadonlyMap<string, ServedInstance>,
  after: ReadonlyMap<string, ServedInstance>,
): Record<string, ServedInstance | null> {
  const changes: Record<string, ServedInstance | null> = {};
  for (const [key, instance] of after) {
    const old = before.get(key);
    if (!old || old.version !== instance.version || old.status !== instance.status || old.held !== instance.held) {
      changes[key] = instance;
    }
  }
  for (const key of before.keys()) if (!after.has(key)) changes[key] = null;
  return changes;
}
