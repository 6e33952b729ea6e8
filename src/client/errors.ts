/**
 * The client's own error codes (`REG_CLIENT_ERR_*`), apart from the peers' `REG_ERR_*`
 * catalogue: the client must work without the server's code. A peer's `{code, message}`
 * answer (a 4xx the client cannot fix by itself) is passed through unchanged as a
 * `RegistryClientError` carrying the peer's code and HTTP status. docs/client.md lists every
 * code; a test fails when one is missing.
 */
export const clientErrorCatalogue = {
  REG_CLIENT_ERR_INVALID_OPTIONS: 'An option of createRegistryClient is missing or invalid; the message names it.',
  REG_CLIENT_ERR_INVALID_ARGUMENT: 'An argument (service name, strategy, instance...) is invalid; the message names it.',
  REG_CLIENT_ERR_NO_PEER_AVAILABLE:
    'No peer answered within the failover budget: every peer failed (connection error, timeout, 5xx, 429) or was backing off.',
  REG_CLIENT_ERR_BAD_RESPONSE: 'A peer answered a 2xx whose body is not what the API documents.',
  REG_CLIENT_ERR_DISCOVERY_UNAVAILABLE:
    'discover() or pick() found no cached list for the service and no peer delivered one within `discoverTimeoutMs`.',
  REG_CLIENT_ERR_NO_INSTANCE: 'pick() found no instance to choose: none is UP (or, for `weighted`, none has a weight above 0).',
  REG_CLIENT_ERR_TOO_MANY_SERVICES: 'One client watches at most 100 services (what one watch stream of a peer allows).',
  REG_CLIENT_ERR_CLOSED: 'The client (or this registration) was closed.',
} as const;

export type ClientErrorCode = keyof typeof clientErrorCatalogue;

export interface RegistryClientErrorDetails {
  /** The HTTP status when a peer answered with an error. */
  status?: number;
  /** The peer that answered (or the last one tried). */
  peer?: string;
  cause?: unknown;
}

/**
 * Every error the client throws. `code` is one of the `REG_CLIENT_ERR_*` codes, or the
 * `REG_ERR_*` code of a peer's answer (then `status` is its HTTP status).
 */
export class RegistryClientError extends Error {
  readonly status: number | undefined;
  readonly peer: string | undefined;

  constructor(
    readonly code: ClientErrorCode | string,
    message: string,
    details: RegistryClientErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'RegistryClientError';
    this.status = details.status;
    this.peer = details.peer;
  }
}

export function invalidArgument(field: string, problem: string): RegistryClientError {
  return new RegistryClientError('REG_CLIENT_ERR_INVALID_ARGUMENT', `${field}: ${problem}`);
}

export function closedError(what = 'the registry client'): RegistryClientError {
  return new RegistryClientError('REG_CLIENT_ERR_CLOSED', `${what} is closed`);
}
