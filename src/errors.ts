/**
 * The one catalogue of error codes. Every error a client can see is one of these, answered as
 * `{code, message}` with the status given here. docs/errors.md lists each code; a unit test
 * fails when a code is missing from it.
 */
export const errorCatalogue = {
  REG_ERR_VALIDATION: { status: 400, summary: 'A field of the request is missing or invalid; the message names it.' },
  REG_ERR_INVALID_JSON: { status: 400, summary: 'The request body is not valid JSON.' },
  REG_ERR_INVALID_XML: { status: 400, summary: 'The request body is not well-formed XML, or holds a DTD.' },
  REG_ERR_EUREKA_APP_MISMATCH: {
    status: 400,
    summary: 'A Eureka register body names another app than its URL (compared upper-cased).',
  },
  REG_ERR_NAMESPACE_MISMATCH: {
    status: 400,
    summary: 'The namespace in the body differs from the one in the query string.',
  },
  REG_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    summary: 'The request body has a content type this route does not accept; the message names the types it takes (application/json; the Eureka API also XML).',
  },
  REG_ERR_BODY_TOO_LARGE: {
    status: 413,
    summary: 'The request body is larger than `limits.bodyMaxBytes` (`limits.peerBodyMaxBytes` on the peer routes); the message gives the limit and the setting.',
  },
  REG_ERR_UNAUTHORIZED: {
    status: 401,
    summary:
      'No credentials, or credentials that match no token (client routes); a peer request that is unsigned, badly signed, replayed or outside the replay window (peer routes).',
  },
  REG_ERR_FORBIDDEN: {
    status: 403,
    summary: 'The token is valid but lacks the scope or the namespace the request needs, or the route has no access policy.',
  },
  REG_ERR_HOST_NOT_ALLOWED: {
    status: 403,
    summary:
      'A dev peer (no `security.tokens`) listening on loopback was sent a request whose `Host` is not a loopback name or address, its configured host or a peer URL of its configuration (DNS rebinding from a web page).',
  },
  REG_ERR_RATE_LIMITED: {
    status: 429,
    summary:
      'This token (or address, when the request has no valid token) sent more than `limits.rateLimitPerSecond` requests a second after a burst of `limits.rateLimitBurst` (a loopback address: `limits.rateLimitLoopbackPerSecond`, off by default); the message names the setting, see `Retry-After`.',
  },
  REG_ERR_QUOTA_EXCEEDED: {
    status: 409,
    summary: 'A new instance would pass `limits.instancesPerServiceMax` or `limits.instancesPerNamespaceMax`.',
  },
  REG_ERR_INSTANCE_NOT_FOUND: {
    status: 404,
    summary: 'This peer does not know the instance (never registered, cancelled or evicted); register again.',
  },
  REG_ERR_ROUTE_NOT_FOUND: { status: 404, summary: 'No route matches the path.' },
  REG_ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    summary: 'The path is known but not with this method; `Allow` lists the methods it takes.',
  },
  REG_ERR_NOT_READY: { status: 503, summary: 'The peer has not finished its start-up sync (or loading its data dir) yet.' },
  REG_ERR_SNAPSHOT_BUSY: {
    status: 503,
    summary:
      'Peer API: this peer already serves its most start-up snapshot streams at once (`POST /v1/peer/snapshot-stream`, 4); the joining peer tries another peer or retries later (`Retry-After`).',
  },
  REG_ERR_TOO_MANY_WATCHERS: {
    status: 429,
    summary:
      'The peer already serves `cluster.watchMaxWatchers` watch streams and long polls, or this token (address without one) already holds its share of them (`limits.heldSharePerPrincipalRatio`); the message says which.',
  },
  REG_ERR_WATCH_TOO_SLOW: {
    status: 429,
    summary: 'Sent as the `dropped` event of a watch stream whose reader fell too far behind; reconnect.',
  },
  REG_ERR_STORAGE: {
    status: 503,
    summary:
      'The peer cannot make writes durable in its data dir (disk full, read-only, I/O error); writes are refused until it can, reads still work.',
  },
  REG_ERR_UI_UNAVAILABLE: {
    status: 503,
    summary: 'The dashboard was not built next to this server (`npm run build` builds it into dist/ui).',
  },
  REG_ERR_INTERNAL: { status: 500, summary: 'An unexpected error; it is logged with the request id.' },
  REG_ERR_TOO_MANY_CONNECTIONS: {
    status: 429,
    summary: 'The Nacos gRPC API already holds `nacos.pushTargetsMax` client connections, or this client (its token, or its address without one) holds its share of them (`limits.heldSharePerPrincipalRatio`); the client tries another server.',
  },
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

/** An error meant for the client: carries its catalogue code and HTTP status. */
export class RegistryError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** For 429 and 503: when to try again, sent as `Retry-After` (seconds). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'RegistryError';
    this.status = errorCatalogue[code].status;
  }

  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/** Shorthand for the most common client error. */
export function invalid(field: string, problem: string): RegistryError {
  return new RegistryError('REG_ERR_VALIDATION', `${field}: ${problem}`);
}
