import { SseParser } from './sse-parser.js';

/**
 * How the dashboard talks to the peer that served it: same origin, JSON, and an optional bearer
 * token (kept in localStorage) on every call. The watch stream is read with fetch rather than
 * EventSource, because EventSource cannot send an Authorization header.
 */

const TOKEN_KEY = 'registry.token';

export function storedToken(): string {
  try {
    return localStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function storeToken(token: string): void {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    // private mode: the token lasts for this page only
  }
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = storedToken();
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

/** A failed call: the peer's `{code, message}` when it answered one. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(path, { headers: headers({ accept: 'application/json' }), signal, cache: 'no-store' });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = (await response.json()) as { code?: string; message?: string };
      if (body.code) message = `${body.code}: ${body.message ?? ''}`;
    } catch {
      // not JSON
    }
    throw new ApiError(message, response.status);
  }
  return (await response.json()) as T;
}

export interface WatchHandlers {
  onOpen(): void;
  onEvent(event: string, data: unknown): void;
  /** The stream ended or failed; it is opened again after `retryInMs`. */
  onClose(error: string, retryInMs: number): void;
}

/**
 * Watches every service of a namespace, and reconnects (1 s, doubling to 10 s) whenever the
 * stream ends: each new stream starts with fresh snapshots. Returns the function that stops it.
 */
export function watchNamespace(namespace: string, handlers: WatchHandlers): () => void {
  const abort = new AbortController();
  let retryMs = 1_000;
  const run = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      let why = 'the stream ended';
      try {
        const response = await fetch(`/v1/watch?namespace=${encodeURIComponent(namespace)}`, {
          headers: headers({ accept: 'text/event-stream' }),
          signal: abort.signal,
          cache: 'no-store',
        });
        if (!response.ok || !response.body) throw new ApiError(`watch answered ${response.status}`, response.status);
        handlers.onOpen();
        retryMs = 1_000;
        const parser = new SseParser();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const event of parser.push(value)) handlers.onEvent(event.event, JSON.parse(event.data));
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        why = error instanceof Error ? error.message : String(error);
      }
      if (abort.signal.aborted) return;
      handlers.onClose(why, retryMs);
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      retryMs = Math.min(retryMs * 2, 10_000);
    }
  };
  void run();
  return () => abort.abort();
}
