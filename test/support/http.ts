import { request } from 'undici';

/** One JSON request to a real peer (end-to-end tests); answers the status and the parsed body. */
export async function requestJson(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) {
  const response = await request(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, any> };
}
