import { request } from 'undici';
import { sendRetryingEarlyClose } from '../../src/client/early-close.js';

/** One JSON call over real HTTP (e2e tests only). */
export async function callJson(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, any> }> {
  // Every call of the API is idempotent: one lost to the keep-alive race on a loaded machine
  // (the peer closed the pooled connection as the request went out) is sent again, as the
  // client and the CLI do (src/client/early-close.ts).
  const response = await sendRetryingEarlyClose(() =>
    request(url, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, any> };
}
