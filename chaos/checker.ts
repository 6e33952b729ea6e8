/**
 * The history checker of the chaos runs: judges a recorded History (history.ts) against the
 * registry's promises. Pure: no I/O, no clock; the same history always gives the same verdict.
 *
 * What it checks (docs/benchmarks.md explains each):
 * - convergence: after the last heal, every peer serves the same records within the target;
 * - presence: an acknowledged registration whose client kept heartbeating is on every peer;
 * - no eviction of a live instance: no peer stops serving an instance whose client kept
 *   heartbeating (by its own acknowledged renewals), and no peer answers 404 to the heartbeat
 *   of such an instance it knew;
 * - cancels stay cancelled: after an acknowledged cancel the cancelling peer never serves the
 *   instance again, no peer ever serves a version newer than the cancel, and no peer has it
 *   at the end;
 * - availability: every call to a peer that was ready and running all along was answered (404
 *   counts as an answer), and every side of every partition acknowledged writes, unless all
 *   of its peers were still starting (see `startupAllowanceMs`);
 * - no peer exits by itself.
 * An instance held by an eviction guard is served, so it is never taken for a bug; one that
 * is no longer served while its client kept heartbeating always is.
 */
import { compareVersions } from '../src/clock/hlc.js';
import { replayObservations, type ClientOp, type FaultInterval, type FinalRound, type History, type PeerRun } from './history.js';

export type PropertyName = 'convergence' | 'presence' | 'no-eviction' | 'cancel-stays' | 'availability' | 'no-crash';

export interface Violation {
  property: PropertyName;
  /** What went wrong, in one sentence. */
  message: string;
  /** The instance concerned, when there is one: its whole history is printed with the violation. */
  key?: string;
  peer?: string;
  atMs: number;
}

export interface CheckFigures {
  ops: Record<string, number>;
  /** Calls to peers that were ready and running all along, and how many of them were answered. */
  callsToLivePeers: number;
  callsAnswered: number;
  partitions: number;
  /** Partition sides no client call reached a running peer of while they lasted (nothing to judge). */
  partitionSidesUnexercised: number;
  /** Partition sides whose peers were all still starting (not ready, started within the start-up allowance). */
  partitionSidesStarting: number;
  kills: number;
  faults: number;
  /** Instances that stopped being served somewhere, in all (legitimate ones included). */
  disappearances: number;
  /** Served instances flagged held by an eviction guard, seen at least once. */
  heldSeen: number;
  convergedAfterMs: number | null;
  finalInstances: number;
  /**
   * Acknowledged cancels that no peer but the one that acknowledged them could have heard: it
   * was cut off from every other peer from the cancel until it was killed, and it came back
   * with an emptied data dir. Nothing can keep such a write; the instance is then judged as
   * one its client abandoned.
   */
  cancelsLostWithDisk: number;
}

export interface CheckResult {
  ok: boolean;
  violations: Violation[];
  figures: CheckFigures;
}

/** What the client's own acknowledged operations say about one instance. */
export class InstanceTimeline {
  private readonly renewals: ClientOp[];
  private readonly registers: ClientOp[];
  readonly cancelAttempts: ClientOp[];
  readonly acknowledgedCancel: ClientOp | undefined;
  readonly leaseDurationMs: number;

  constructor(
    readonly key: string,
    ops: readonly ClientOp[],
    readonly abandonedAtMs: number | undefined,
    private readonly slackMs: number,
  ) {
    const sorted = [...ops].sort((a, b) => a.sentAtMs - b.sentAtMs);
    this.renewals = sorted.filter((op) => (op.kind === 'register' || op.kind === 'heartbeat') && op.outcome === 'ok');
    this.registers = this.renewals.filter((op) => op.kind === 'register');
    this.cancelAttempts = sorted.filter((op) => op.kind === 'cancel');
    this.acknowledgedCancel = this.cancelAttempts.find((op) => op.outcome === 'ok');
    this.leaseDurationMs = sorted.find((op) => op.kind === 'register')?.leaseDurationMs ?? 0;
  }

  /** The last acknowledged register answered at or before `atMs`. */
  registeredBy(atMs: number): ClientOp | undefined {
    let found: ClientOp | undefined;
    for (const op of this.registers) if (op.doneAtMs <= atMs) found = op;
    return found;
  }

  /** Was a cancel sent (acknowledged or not) at or before `atMs`? Then it may have taken effect. */
  cancelSentBy(atMs: number): boolean {
    return this.cancelAttempts.some((op) => op.sentAtMs <= atMs);
  }

  /**
   * Did the client surely keep the instance alive up to `atMs`? True when an acknowledged
   * register answered by then starts a chain of acknowledged renewals in which each one was
   * answered before the lease of the one before could run out (counted from when it was
   * sent, less the slack), the last one's lease still runs at `atMs`, and the client neither
   * abandoned the instance nor sent a cancel by then.
   */
  keptAliveAt(atMs: number): boolean {
    if (this.abandonedAtMs !== undefined && this.abandonedAtMs <= atMs) return false;
    if (this.cancelSentBy(atMs)) return false;
    const start = this.registeredBy(atMs);
    if (!start) return false;
    const leaseMs = this.leaseDurationMs - this.slackMs;
    let coveredUntilMs = start.sentAtMs + leaseMs;
    for (const op of this.renewals) {
      if (op.sentAtMs < start.sentAtMs || op === start) continue;
      if (op.sentAtMs > atMs) break;
      if (op.doneAtMs > coveredUntilMs) {
        // A gap: the lease may have run out before this renewal was applied.
        if (op.doneAtMs <= atMs) return false;
        break;
      }
      coveredUntilMs = Math.max(coveredUntilMs, op.sentAtMs + leaseMs);
    }
    return coveredUntilMs >= atMs;
  }

  /** Every operation on this instance, for printing. */
  static opsOf(history: History, key: string): ClientOp[] {
    return history.ops.filter((op) => op.key === key).sort((a, b) => a.sentAtMs - b.sentAtMs);
  }
}

/** Judges one history. */
export function checkHistory(history: History): CheckResult {
  const violations: Violation[] = [];
  const timelines = buildTimelines(history);
  const figures: CheckFigures = {
    ops: countOps(history.ops),
    callsToLivePeers: 0,
    callsAnswered: 0,
    partitions: history.faults.filter((fault) => fault.kind === 'partition').length,
    partitionSidesUnexercised: 0,
    partitionSidesStarting: 0,
    kills: history.faults.filter((fault) => fault.kind === 'kill').length,
    faults: history.faults.length,
    disappearances: 0,
    heldSeen: 0,
    convergedAfterMs: null,
    finalInstances: 0,
    cancelsLostWithDisk: 0,
  };
  checkObservations(history, timelines, violations, figures);
  checkHeartbeatAnswers(history, timelines, violations);
  checkAvailability(history, violations, figures);
  checkFinal(history, timelines, violations, figures);
  for (const run of history.runs) {
    if (run.endedBy === 'crash') {
      violations.push({
        property: 'no-crash',
        message: `${run.peer} (incarnation ${run.incarnation}) exited by itself`,
        peer: run.peer,
        atMs: run.endedAtMs ?? history.endedAtMs,
      });
    }
  }
  violations.sort((a, b) => a.atMs - b.atMs);
  return { ok: violations.length === 0, violations, figures };
}

function buildTimelines(history: History): Map<string, InstanceTimeline> {
  const opsByKey = new Map<string, ClientOp[]>();
  for (const op of history.ops) {
    const list = opsByKey.get(op.key) ?? [];
    list.push(op);
    opsByKey.set(op.key, list);
  }
  const abandoned = new Map(history.abandoned.map((entry) => [entry.key, entry.atMs]));
  const timelines = new Map<string, InstanceTimeline>();
  for (const [key, ops] of opsByKey) {
    timelines.set(key, new InstanceTimeline(key, ops, abandoned.get(key), history.settings.leaseSlackMs));
  }
  return timelines;
}

function countOps(ops: readonly ClientOp[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const op of ops) counts[`${op.kind}:${op.outcome}`] = (counts[`${op.kind}:${op.outcome}`] ?? 0) + 1;
  return counts;
}

/** No-eviction and cancel-stays, from what the peers served. */
function checkObservations(
  history: History,
  timelines: Map<string, InstanceTimeline>,
  violations: Violation[],
  figures: CheckFigures,
): void {
  const held = new Set<string>();
  replayObservations(history.observations, ({ observation, served, vanished }) => {
    const { peer, incarnation } = observation;
    for (const { key, previous } of vanished) {
      figures.disappearances += 1;
      const timeline = timelines.get(key);
      if (timeline?.keptAliveAt(observation.doneAtMs)) {
        violations.push({
          property: 'no-eviction',
          message: `${peer} (incarnation ${incarnation}) stopped serving ${key} between the polls sent at ${rel(history, previous.sentAtMs)} and ${rel(history, observation.sentAtMs)}, while its client kept heartbeating`,
          key,
          peer,
          atMs: observation.sentAtMs,
        });
      }
    }
    for (const [key, instance] of served) {
      if (instance.held) held.add(key);
      const cancel = timelines.get(key)?.acknowledgedCancel;
      if (!cancel?.version) continue;
      if (compareVersions(instance.version, cancel.version) > 0) {
        violations.push({
          property: 'cancel-stays',
          message: `${peer} served ${key} at version ${instance.version}, newer than its acknowledged cancel ${cancel.version}`,
          key,
          peer,
          atMs: observation.sentAtMs,
        });
      } else if (cancel.peer === peer && cancel.incarnation === incarnation && observation.sentAtMs > cancel.doneAtMs) {
        violations.push({
          property: 'cancel-stays',
          message: `${peer} served ${key} in the poll sent at ${rel(history, observation.sentAtMs)}, after it acknowledged its cancel at ${rel(history, cancel.doneAtMs)}`,
          key,
          peer,
          atMs: observation.sentAtMs,
        });
      }
    }
  });
  figures.heldSeen = held.size;
}

/**
 * A 404 to a heartbeat means the peer does not know the instance. That is fine from a peer that
 * never knew it (registered elsewhere, not replicated yet, or a restarted peer); from one that
 * acknowledged it before, while its client kept it alive, it means the instance was evicted.
 */
function checkHeartbeatAnswers(history: History, timelines: Map<string, InstanceTimeline>, violations: Violation[]): void {
  const known = new Set<string>();
  const sorted = [...history.ops].sort((a, b) => a.doneAtMs - b.doneAtMs);
  for (const op of sorted) {
    const where = `${op.key}@${op.peer}#${op.incarnation}`;
    if (op.outcome === 'ok' && op.kind !== 'cancel') known.add(where);
    if (op.kind !== 'heartbeat' || op.outcome !== 'not-found' || !known.has(where)) continue;
    if (timelines.get(op.key)?.keptAliveAt(op.sentAtMs)) {
      violations.push({
        property: 'no-eviction',
        message: `${op.peer} (incarnation ${op.incarnation}) answered 404 to a heartbeat of ${op.key} it had acknowledged before, while its client kept heartbeating`,
        key: op.key,
        peer: op.peer,
        atMs: op.sentAtMs,
      });
    }
  }
}

function runOf(history: History, peer: string, incarnation: number): PeerRun | undefined {
  return history.runs.find((run) => run.peer === peer && run.incarnation === incarnation);
}

/**
 * Every call to a ready, running peer is answered (404 is an answer); every side of every
 * partition answered writes while it lasted (a side whose only peers were still syncing
 * fails this rule, unless every write reached its peer sooner after that peer started than it
 * could have got ready even alone: `startupAllowanceMs`).
 */
function checkAvailability(history: History, violations: Violation[], figures: CheckFigures): void {
  for (const op of history.ops) {
    const run = runOf(history, op.peer, op.incarnation);
    // Only calls sent once the peer was ready (start-up sync done: before, it may refuse writes
    // with 503 by design) and answered before it ended: a call racing a kill may fail through
    // no fault of the peer. A side of a partition whose peers never got ready is still caught
    // by the rule below.
    const ready = run?.readyAtMs ?? null;
    if (!run || ready === null || op.sentAtMs < ready || (run.endedAtMs !== null && op.doneAtMs >= run.endedAtMs)) continue;
    if (run.endedBy === 'crash') continue;
    figures.callsToLivePeers += 1;
    if (op.outcome !== 'failed') {
      figures.callsAnswered += 1;
      continue;
    }
    violations.push({
      property: 'availability',
      message: `${op.kind} of ${op.key} sent to ${op.peer} (ready and running all along) failed: ${op.error ?? `HTTP ${op.httpStatus}`}`,
      key: op.key,
      peer: op.peer,
      atMs: op.sentAtMs,
    });
  }
  // Every side of every partition kept taking writes (heartbeats are writes to a lease too).
  for (const fault of history.faults) {
    if (fault.kind !== 'partition' || !fault.sides) continue;
    for (const side of fault.sides) {
      const writes = history.ops.filter((op) => {
        if (!side.includes(op.peer) || op.sentAtMs < fault.startedAtMs || op.doneAtMs > fault.endedAtMs) return false;
        const run = runOf(history, op.peer, op.incarnation);
        return run !== undefined && run.startedAtMs <= op.sentAtMs && (run.endedAtMs === null || run.endedAtMs > op.doneAtMs);
      });
      if (writes.length === 0) {
        figures.partitionSidesUnexercised += 1;
        continue;
      }
      // A 404 is an answer too: a peer restarted with an emptied data dir that knows no
      // instance yet answers a status change or cancel with 404, and is serving all the same.
      if (writes.some((op) => op.outcome !== 'failed')) continue;
      // Every write went to a peer still starting, sent sooner after that peer started than it
      // could have got ready even alone (the start-up sync asks every other peer first): no
      // peer of that side could serve it. A write to a peer that had had the time to start
      // alone and was still not ready is a violation.
      const allowanceMs = history.settings.startupAllowanceMs ?? 0;
      const stillStarting = (op: ClientOp) => {
        const run = runOf(history, op.peer, op.incarnation)!;
        const notReady = run.readyAtMs === null || run.readyAtMs > op.sentAtMs;
        return notReady && op.sentAtMs - run.startedAtMs < allowanceMs;
      };
      if (writes.every(stillStarting)) {
        figures.partitionSidesStarting += 1;
        continue;
      }
      violations.push({
        property: 'availability',
        message: `no write was answered on side [${side.join(', ')}] of the partition ${rel(history, fault.startedAtMs)}..${rel(history, fault.endedAtMs)} (${writes.length} sent)`,
        atMs: fault.startedAtMs,
      });
    }
  }
}

/** Convergence within the target after the last heal; presence of live instances; no cancelled one left. */
function checkFinal(
  history: History,
  timelines: Map<string, InstanceTimeline>,
  violations: Violation[],
  figures: CheckFigures,
): void {
  const { final, peers, settings } = history;
  const rounds = [...final.rounds].sort((a, b) => a.atMs - b.atMs);
  const converged = rounds.find((round) => sameEverywhere(round, peers));
  const judged = converged ?? rounds.at(-1);
  if (!judged) {
    violations.push({ property: 'convergence', message: 'no final round was recorded', atMs: history.endedAtMs });
    return;
  }
  if (converged) {
    figures.convergedAfterMs = converged.doneAtMs - final.lastHealAtMs;
    if (figures.convergedAfterMs > settings.convergenceTargetMs) {
      violations.push({
        property: 'convergence',
        message: `the peers served the same records only ${figures.convergedAfterMs} ms after the last heal (target ${settings.convergenceTargetMs} ms)`,
        atMs: converged.atMs,
      });
    }
  } else {
    violations.push({
      property: 'convergence',
      message: `the peers never served the same records after the last heal (last round ${rel(history, judged.atMs)}): ${describeDifference(judged, peers)}`,
      atMs: judged.atMs,
    });
  }
  figures.finalInstances = Object.keys(judged.perPeer[peers[0]!] ?? {}).length;
  for (const timeline of timelines.values()) {
    const { key } = timeline;
    const registered = timeline.registeredBy(judged.atMs - settings.replicationAllowanceMs);
    if (registered && timeline.keptAliveAt(judged.doneAtMs)) {
      const missing = peers.filter((peer) => judged.perPeer[peer]?.[key] === undefined);
      if (missing.length > 0) {
        violations.push({
          property: 'presence',
          message: `${key}, registered and kept heartbeating, is missing on ${missing.join(', ')} in the final round at ${rel(history, judged.atMs)}`,
          key,
          atMs: judged.atMs,
        });
      }
    }
    if (timeline.acknowledgedCancel && lostWithDisk(history, timeline.acknowledgedCancel)) {
      figures.cancelsLostWithDisk += 1;
    } else if (timeline.acknowledgedCancel) {
      const present = peers.filter((peer) => judged.perPeer[peer]?.[key] !== undefined);
      if (present.length > 0) {
        violations.push({
          property: 'cancel-stays',
          message: `${key} was cancelled (acknowledged at ${rel(history, timeline.acknowledgedCancel.doneAtMs)}) but ${present.join(', ')} still serve it in the final round`,
          key,
          atMs: judged.atMs,
        });
      }
    }
  }
}

/**
 * Was this acknowledged write lost with its peer's disk before any other peer could hear it?
 * True when the peer run that acknowledged it was killed, and its next run started with an
 * emptied data dir (or none), and from before the write was sent until the kill either
 * - a partition isolated that peer alone, or
 * - a one-way black hole swallowed everything it sent to every other peer, and the kill came
 *   within `replicationAllowanceMs` of the acknowledgement: the others could then only have
 *   pulled the write (an anti-entropy round of theirs with it), in less time than a write is
 *   allowed to take to spread. Found reading seed 8675312, 3 peers: a cancel acknowledged by
 *   peer-c 0.93 s before it was killed, under a one-way black hole of peer-c's links, came
 *   back once peer-c restarted with an emptied data dir.
 */
export function lostWithDisk(history: History, op: ClientOp): boolean {
  const run = runOf(history, op.peer, op.incarnation);
  if (!run || run.endedBy !== 'kill' || run.endedAtMs === null) return false;
  const next = runOf(history, op.peer, op.incarnation + 1);
  if (!next || next.dataDir === 'keep') return false;
  const killedAtMs = run.endedAtMs;
  const throughout = (fault: FaultInterval) => fault.startedAtMs <= op.sentAtMs && fault.endedAtMs >= killedAtMs;
  const isolated = history.faults.some(
    (fault) => fault.kind === 'partition' && throughout(fault) && fault.sides?.some((side) => side.length === 1 && side[0] === op.peer) === true,
  );
  if (isolated) return true;
  if (unsentWhenKilled(history, op, killedAtMs)) return true;
  if (killedAtMs - op.doneAtMs > history.settings.replicationAllowanceMs) return false;
  const others = history.peers.filter((peer) => peer !== op.peer);
  return history.faults.some(
    (fault) =>
      fault.kind === 'one-way' &&
      fault.detail === 'blackhole' &&
      throughout(fault) &&
      others.every((other) => fault.links?.includes(`${op.peer}->${other}`) === true),
  );
}

/**
 * Was the peer killed before its replication batch with this write could leave? A batch is sent
 * `replicationBatchDelayMs` after the write that opens it; when no other write sent to that peer
 * run (heartbeats are not replicated) could have been applied within that long before this one,
 * this one opened it, at the earliest when it was sent. Found reading seed 8675377, 3 peers: peer-c
 * acknowledged a cancel at +59.983 s (sent at +59.981 s), was killed at +59.984 s and restarted
 * with an emptied data dir; no fault cut its links, and the cancel was lost.
 */
function unsentWhenKilled(history: History, op: ClientOp, killedAtMs: number): boolean {
  const batchDelayMs = history.settings.replicationBatchDelayMs;
  if (batchDelayMs === undefined || killedAtMs - op.sentAtMs >= batchDelayMs) return false;
  // Any other write sent to that peer run (answered or not: it may have been applied) that
  // could have been applied within a batch delay before this one might have opened the batch.
  return !history.ops.some(
    (other) =>
      other !== op &&
      other.peer === op.peer &&
      other.incarnation === op.incarnation &&
      other.kind !== 'heartbeat' &&
      other.sentAtMs < op.doneAtMs &&
      other.doneAtMs > op.sentAtMs - batchDelayMs,
  );
}

/** Did every peer answer the round, with the same records (key and version)? */
export function sameEverywhere(round: FinalRound, peers: readonly string[]): boolean {
  const first = round.perPeer[peers[0]!];
  if (!first) return false;
  const reference = JSON.stringify(sortedEntries(first));
  return peers.every((peer) => round.perPeer[peer] !== undefined && JSON.stringify(sortedEntries(round.perPeer[peer]!)) === reference);
}

function sortedEntries(records: Record<string, string>): [string, string][] {
  return Object.entries(records).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Which peers disagree with the first one, and on which keys (at most a few named). */
export function describeDifference(round: FinalRound, peers: readonly string[]): string {
  const first = peers[0]!;
  const reference = round.perPeer[first] ?? {};
  const parts: string[] = [];
  for (const peer of peers.slice(1)) {
    const records = round.perPeer[peer];
    if (!records) {
      parts.push(`${peer} did not answer`);
      continue;
    }
    const keys = new Set([...Object.keys(reference), ...Object.keys(records)]);
    const differing = [...keys].filter((key) => reference[key] !== records[key]).sort();
    if (differing.length > 0) parts.push(`${peer} differs from ${first} on ${differing.length} (${differing.slice(0, 5).join(', ')})`);
  }
  if (!round.perPeer[first]) parts.unshift(`${first} did not answer`);
  return parts.join('; ') || 'no difference';
}

/** A time as seconds since the start of the run, for messages. */
export function rel(history: History, atMs: number): string {
  return `+${((atMs - history.startedAtMs) / 1_000).toFixed(3)}s`;
}
