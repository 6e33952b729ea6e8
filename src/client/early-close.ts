/**
 * The keep-alive race: a client sends a request on a pooled connection at the moment the peer
 * closes it for being idle. The request is lost before the peer read it, and undici rejects
 * with `SocketError: other side closed` (or the socket reports ECONNRESET / EPIPE) before any
 * byte of an answer arrived. Clients keep a connection idle for less time than the peer does
 * (docs/deployment.md), so this needs a stalled event loop on either side, but on a loaded
 * machine it happens. Every request of this API is idempotent (a register, a heartbeat, a
 * status change, a cancel and a read may each be repeated with the same effect), so such a
 * request is sent once more, at once, on a fresh connection. A failure once an answer has
 * begun is never retried here: that is the caller's (failover, or an error to the user).
 */

/** The codes of a connection that closed before an answer's head arrived. */
const CLOSED_BEFORE_ANSWER = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * True when `error` (from sending a request, before its response was handed over) says that the
 * connection closed before the answer came: the request may not have reached the peer at all.
 */
export function closedBeforeAnswer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CLOSED_BEFORE_ANSWER.has(code);
}

/**
 * Sends an idempotent request; when its connection closed before any answer (see above), sends
 * it once more. Not again after an abort: the caller gave up. When the second send fails too,
 * the first failure is thrown (see below).
 */
export async function sendRetryingEarlyClose<T>(send: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (!closedBeforeAnswer(error) || signal?.aborted) throw error;
    try {
      return await send();
    } catch {
      // The first request may have reached the peer before its connection closed (a peer that
      // died as it answered): a retry that fails, even one refused outright, says nothing of the
      // first one's fate. The caller is told of the first failure, which is in doubt, never of
      // a refusal that would say the request was surely not applied.
      throw error;
    }
  }
}
