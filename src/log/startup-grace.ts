/**
 * How long after a peer starts the peers it cannot reach yet are logged at debug rather than
 * warn: peers started together (`npm run cluster`, a deploy, a whole cluster restarted) come up
 * within seconds of each other, and one that is still starting is not news. Past the grace,
 * or for a peer that answers with an error (it is up, and refuses), the warning stays.
 */
export const STARTUP_GRACE_MS = 30_000;

/**
 * The level for "cannot reach peer X": debug while this peer is within `graceMs` of its start
 * and X never answered (no HTTP answer: refused, reset, timed out: it may not be listening
 * yet), warn otherwise. Pure: the caller passes its clock's time.
 */
export function unreachablePeerLevel(nowMs: number, startedAtMs: number, peerAnswered: boolean, graceMs: number = STARTUP_GRACE_MS): 'debug' | 'warn' {
  return !peerAnswered && nowMs - startedAtMs < graceMs ? 'debug' : 'warn';
}
