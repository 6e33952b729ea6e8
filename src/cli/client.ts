import { request, type Dispatcher } from 'undici';
import { sendRetryingEarlyClose } from '../client/early-close.js';

/** Exit codes of the command line (docs/cli.md). */
export const EXIT_OK = 0;
export const EXIT_PEER = 1;
export const EXIT_USAGE = 2;
/** A second Ctrl-C while a command cleans up (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** A failure the command line reports in one line, with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, EXIT_USAGE);
}

/** Where and as whom the client commands talk to a peer. */
export interface ClientOptions {
  url: string;
  namespace?: string;
  token?: string;
  /** Per-call timeout (connect and headers). */
  timeoutMs?: number;
}

export interface PeerAnswer<T> {
  status: number;
  body: T;
}

/** Checks `--url`: an absolute http(s) base URL; a trailing slash is dropped. */
export function parseBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`--url: must be an absolute http(s) URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError('--url: must use http or https');
  return url.href.replace(/\/+$/, '');
}

/**
 * A small HTTP client over undici for the command line: adds `?namespace=` and the bearer
 * token to every call, and turns a `{code, message}` answer or a network failure into a
 * CliError (exit code 1) that says which peer and what went wrong.
 */
export class PeerClient {
  readonly baseUrl: string;

  constructor(readonly options: ClientOptions) {
    this.baseUrl = parseBaseUrl(options.url);
  }

  /** The full URL of a path, with the namespace (when one was given) and extra query values. */
  url(path: string, query: Record<string, string | undefined> = {}): string {
    const url = new URL(this.baseUrl + path);
    if (this.options.namespace !== undefined) url.searchParams.set('namespace', this.options.namespace);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, value);
    return url.href;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}), ...extra };
  }

  /** One JSON call; `accept` lists the statuses the caller handles itself (others throw). */
  async call<T>(
    method: Dispatcher.HttpMethod,
    path: string,
    options: { body?: unknown; query?: Record<string, string | undefined>; accept?: number[] } = {},
  ): Promise<PeerAnswer<T>> {
    const url = this.url(path, options.query);
    let response: Dispatcher.ResponseData;
    try {
      // Every call of the API is idempotent: one lost to the keep-alive race is sent again.
      response = await sendRetryingEarlyClose(() =>
        request(url, {
          method,
          headers: this.headers(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          headersTimeout: this.options.timeoutMs ?? 10_000,
          bodyTimeout: this.options.timeoutMs ?? 10_000,
        }),
      );
    } catch (error) {
      throw new CliError(`cannot reach ${this.baseUrl}: ${describeNetworkError(error)}`, EXIT_PEER);
    }
    const text = await response.body.text();
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON: keep the text for the message
    }
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    if (!ok && !(options.accept ?? []).includes(response.statusCode)) {
      const detail =
        typeof body === 'object' && body !== null && 'code' in body
          ? `${(body as { code: string }).code}: ${(body as { message?: string }).message ?? ''}`
          : String(text).slice(0, 200);
      throw new CliError(`${method} ${path} answered ${response.statusCode} ${detail}`.trim(), EXIT_PEER);
    }
    return { status: response.statusCode, body: body as T };
  }

  get<T>(path: string, query?: Record<string, string | undefined>): Promise<T> {
    return this.call<T>('GET', path, { query }).then((answer) => answer.body);
  }
}

export function describeNetworkError(error: unknown): string {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
