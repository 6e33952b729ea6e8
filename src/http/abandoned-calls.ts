import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StallWatch } from '../clock/stall-watch.js';
import { DEADLINE_HEADER } from '../transport/http-transport.js';

/*
 * Peer calls abandoned by their callers while this peer stood still, skipped unanswered when it
 * goes on (why, and the window they are held in: clock/stall-watch.ts).
 */

/** The path every peer call starts with (peer-routes.ts): only these are held. */
export const PEER_CALL_PREFIX = '/v1/peer/';

/**
 * How far past a call's deadline (`DEADLINE_HEADER`, on the caller's clock) it is skipped: room
 * for the two peers' clocks to differ. Clocks further apart than this make the calls of that
 * caller fail at once (their connection is closed) for the rest of the hold after a stall (5 s,
 * at most 10 s): its callers try again, and are served once the hold is over.
 */
export const DEADLINE_SLACK_MS = 2_000;

/** A deadline as sent: epoch ms, digits only. */
const DEADLINE = /^\d{1,15}$/;

/**
 * Skips a peer call whose caller's deadline passed (a replication batch sent on a connection
 * opened before the stall carries its whole body before any close could be read: only its
 * deadline tells); false for a call with no deadline or one still waited for.
 */
export function skippedPastDeadline(raw: IncomingMessage, watch: StallWatch, nowMs = Date.now()): boolean {
  const sent = raw.headers[DEADLINE_HEADER];
  if (typeof sent !== 'string' || !DEADLINE.test(sent) || nowMs <= Number(sent) + DEADLINE_SLACK_MS) return false;
  watch.noteDropped(false);
  raw.socket.destroy();
  return true;
}

/**
 * Whether the caller of `raw` has gone: it closed its side of the connection (no peer
 * half-closes a call it still waits for: undici closes only a call it gave up on), or the
 * connection broke.
 */
export function callerLeft(raw: IncomingMessage): boolean {
  const socket = raw.socket;
  return raw.destroyed || socket.destroyed || socket.readableEnded;
}

/**
 * Holds a request for two turns of the loop (the close that came with it is read in the
 * turn after the request), then drops it unanswered when its caller left, or hands it on.
 */
export function holdThenHandOn(
  raw: IncomingMessage,
  res: ServerResponse,
  watch: StallWatch,
  handOn: (raw: IncomingMessage, res: ServerResponse) => void,
): void {
  setImmediate(() =>
    setImmediate(() => {
      if (!callerLeft(raw)) return handOn(raw, res);
      watch.noteDropped(true);
      raw.socket.destroy();
    }),
  );
}
