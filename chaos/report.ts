/**
 * Prints a checked history for people: the verdict, the figures, and for each violation the
 * exact history behind it (every operation on the instance, every change in what each peer
 * served of it, and the faults around it). Pure: returns text.
 */
import { rel, type CheckResult, type Violation } from './checker.js';
import type { FaultInterval, History } from './history.js';

/** How many violations are printed in full (the rest are counted). */
const PRINTED_VIOLATIONS = 10;
/** Faults this long before a violation are printed with it. */
const FAULT_CONTEXT_MS = 30_000;

export function formatVerdict(history: History, result: CheckResult): string {
  const lines: string[] = [];
  const seconds = ((history.endedAtMs - history.startedAtMs) / 1_000).toFixed(0);
  lines.push(
    `chaos seed ${history.seed}: ${history.peers.length} peers, ${seconds} s, ${history.ops.length} client operations, ${history.faults.length} faults: ${result.ok ? 'PASS' : `FAIL (${result.violations.length} violations)`}`,
  );
  lines.push(formatFigures(result));
  const byProperty = new Map<string, number>();
  for (const violation of result.violations) byProperty.set(violation.property, (byProperty.get(violation.property) ?? 0) + 1);
  if (byProperty.size > 0) lines.push(`violations by property: ${[...byProperty].map(([p, n]) => `${p} ${n}`).join(', ')}`);
  result.violations.slice(0, PRINTED_VIOLATIONS).forEach((violation, index) => {
    lines.push('', `#${index + 1} ${formatViolation(history, violation)}`);
  });
  if (result.violations.length > PRINTED_VIOLATIONS) {
    lines.push('', `... and ${result.violations.length - PRINTED_VIOLATIONS} more (the whole history is in the JSON file)`);
  }
  if (!result.ok) lines.push('', `replay the same choices with: npm run chaos -- --seed ${history.seed} --peers ${history.peers.length}`);
  return lines.join('\n');
}

export function formatFigures(result: CheckResult): string {
  const f = result.figures;
  const ops = Object.entries(f.ops)
    .sort()
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  return [
    `operations: ${ops}`,
    `calls to ready, running peers answered: ${f.callsAnswered}/${f.callsToLivePeers}`,
    `faults: ${f.faults} (${f.partitions} partitions, ${f.partitionSidesUnexercised} partition sides no call reached, ${f.partitionSidesStarting ?? 0} whose peers were all still starting, ${f.kills} kills); instances vanishing somewhere (legitimate ones included): ${f.disappearances}; held by an eviction guard at some point: ${f.heldSeen}; acknowledged cancels lost with a wiped disk before any peer could hear them: ${f.cancelsLostWithDisk}`,
    `converged ${f.convergedAfterMs === null ? 'never' : `${f.convergedAfterMs} ms`} after the last heal, on ${f.finalInstances} instances`,
  ].join('\n');
}

/** One violation with the history of its instance. */
export function formatViolation(history: History, violation: Violation): string {
  const lines = [`[${violation.property}] ${rel(history, violation.atMs)} ${violation.message}`];
  const faults = history.faults.filter(
    (fault) => fault.startedAtMs <= violation.atMs && fault.endedAtMs >= violation.atMs - FAULT_CONTEXT_MS,
  );
  if (faults.length > 0) {
    lines.push('  faults around it:');
    for (const fault of faults) lines.push(`    ${formatFault(history, fault)}`);
  }
  const runs = history.runs.filter((run) => run.startedAtMs <= violation.atMs && (run.endedAtMs ?? Infinity) >= violation.atMs - FAULT_CONTEXT_MS);
  if (runs.some((run) => run.incarnation > 1 || run.endedAtMs !== null)) {
    lines.push('  peer processes around it:');
    for (const run of runs) {
      lines.push(
        `    ${run.peer}#${run.incarnation} started ${rel(history, run.startedAtMs)}${run.readyAtMs === null ? '' : `, ready ${rel(history, run.readyAtMs)}`}${run.endedAtMs === null ? '' : `, ended ${rel(history, run.endedAtMs)} (${run.endedBy})`}, data dir: ${run.dataDir}`,
      );
    }
  }
  if (violation.key === undefined) return lines.join('\n');
  const key = violation.key;
  lines.push(`  operations on ${key}:`);
  for (const op of history.ops.filter((o) => o.key === key).sort((a, b) => a.sentAtMs - b.sentAtMs)) {
    const answer = op.outcome === 'failed' ? `failed (${op.error ?? `HTTP ${op.httpStatus}`})` : `${op.outcome} ${op.httpStatus ?? ''}`;
    const extra = [op.status && `status ${op.status}`, op.leaseDurationMs && `lease ${op.leaseDurationMs} ms`, op.version && `version ${op.version}`]
      .filter(Boolean)
      .join(', ');
    lines.push(`    ${rel(history, op.sentAtMs)}..${rel(history, op.doneAtMs)} ${op.kind} -> ${op.peer}#${op.incarnation}: ${answer.trim()}${extra ? ` (${extra})` : ''}`);
  }
  const abandoned = history.abandoned.find((entry) => entry.key === key);
  if (abandoned) lines.push(`    ${rel(history, abandoned.atMs)} client stopped heartbeating (abandoned)`);
  lines.push(`  what the peers served of ${key} (changes only):`);
  for (const observation of history.observations) {
    const change = observation.changes[key];
    if (change === undefined) continue;
    const what = change === null ? 'gone' : `served ${change.status} version ${change.version}${change.held ? ' (held)' : ''}`;
    lines.push(`    poll ${rel(history, observation.sentAtMs)} ${observation.peer}#${observation.incarnation}: ${what}`);
  }
  const rounds = history.final.rounds;
  const shown = rounds.length <= 5 ? rounds : [...rounds.slice(0, 2), ...rounds.slice(-3)];
  for (const round of shown) {
    if (rounds.length > 5 && round === rounds.at(-3)) lines.push(`    ... ${rounds.length - 5} more final rounds`);
    const where = history.peers.map((peer) => `${peer}:${round.perPeer[peer]?.[key] ?? '-'}`).join(' ');
    lines.push(`    final round ${rel(history, round.atMs)}: ${where}`);
  }
  return lines.join('\n');
}

export function formatFault(history: History, fault: FaultInterval): string {
  const what =
    fault.kind === 'partition'
      ? `partition ${fault.sides?.map((side) => `[${side.join(' ')}]`).join(' | ')}`
      : fault.kind === 'kill'
        ? `kill ${fault.peer}`
        : `${fault.kind} ${fault.links?.join(' ')}`;
  return `${rel(history, fault.startedAtMs)}..${rel(history, fault.endedAtMs)} ${what} (${fault.detail})`;
}
