/**
 * The one line a peer prints (`registry: ...`, then exit 2) when it cannot start: what failed,
 * where, and what to change. Pure: the caller (peer.ts) writes it and exits. Node's errors say
 * `listen EADDRINUSE: address already in use 127.0.0.1:8761`; a newcomer needs to hear which
 * port, which flag sets it, and what usually holds it.
 */

/** Something a peer listens on, and how its address is set. */
export interface ListenTarget {
  /** e.g. `the HTTP API`, `the DNS listener`. */
  what: string;
  host: string;
  port: number;
  /** The settings that choose the port, e.g. `--port (REGISTRY_PORT, or \`port\` in the config file)`. */
  portSetting: string;
}

/** The errno-style code of a Node error (`EADDRINUSE`, `ERR_OSSL_PEM_NO_START_LINE`), if any. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const HOST_SETTING = '--host (REGISTRY_HOST, or `host` in the config file)';

/** Why listening on `target` failed, and what to do. */
export function listenFailure(error: unknown, target: ListenTarget): string {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  const where = `cannot listen on ${host}:${target.port} (${target.what})`;
  switch (codeOf(error)) {
    case 'EADDRINUSE':
      return `${where}: the port is already in use (by another peer, or another program); stop that one, or choose another port with ${target.portSetting}`;
    case 'EACCES':
      return target.port < 1024
        ? `${where}: permission denied (a port below 1024 needs root or the CAP_NET_BIND_SERVICE capability); choose a port from 1024 up with ${target.portSetting}`
        : `${where}: permission denied; choose another port with ${target.portSetting}`;
    case 'EADDRNOTAVAIL':
      return `${where}: no network interface of this machine has the address ${target.host}; choose another with ${HOST_SETTING}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${where}: the host name ${target.host} does not resolve; choose another with ${HOST_SETTING}`;
    default:
      return `${where}: ${messageOf(error)}`;
  }
}

/** TLS files that were read but do not make a certificate and key the server can use. */
export function tlsFailure(error: unknown, files: { certFile: string | null; keyFile: string | null }): string {
  return (
    `bad TLS files (--tls-cert ${files.certFile ?? '(none)'}, --tls-key ${files.keyFile ?? '(none)'}): ${messageOf(error)}; ` +
    'they must be PEM, and the key must belong to the certificate'
  );
}

/** Whether an error comes from OpenSSL reading certificates or keys (Node codes them ERR_OSSL_*). */
export function isTlsError(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && (code.startsWith('ERR_OSSL') || code.startsWith('ERR_TLS'));
}

/** Anything else that ends a start: its message, never a stack trace. */
export function otherFailure(during: string, error: unknown): string {
  const code = codeOf(error);
  return `cannot start (${during}): ${messageOf(error)}${code && !messageOf(error).includes(code) ? ` (${code})` : ''}`;
}
