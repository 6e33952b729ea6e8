import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, type InjectOptions, type Response } from 'light-my-request';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/http/server.js';
import { createTestNode, type TestNode } from './node.js';

/** A peer's HTTP app, reached through its server's own request listener (the front door, src/http/front-door.ts). */
export interface Door extends TestNode {
  app: FastifyInstance;
  /** Requests fastify saw (a shortcut handed a request on or back, or was never asked). */
  fastifySaw: string[];
  /** Through the server's request listener, as a socket's request arrives. */
  door(options: InjectOptions): Promise<Response>;
}

/** A started peer and its app; `app.inject` on it goes straight to fastify, `door` through the front door. */
export async function openDoor(options: Parameters<typeof createTestNode>[0] = {}): Promise<Door> {
  const testNode = await createTestNode(options);
  const app = await buildServer({ node: testNode.node });
  await app.ready();
  const [listener] = app.server.listeners('request') as ((raw: IncomingMessage, res: ServerResponse) => void)[];
  const fastifySaw: string[] = [];
  // Fastify waits for the end of every answer it sends (its reply's 'finish' listener: the
  // latency hook); a shortcut adds none.
  const dispatch = (raw: IncomingMessage, res: ServerResponse) => {
    const on = res.on.bind(res) as (event: string, handler: () => void) => ServerResponse;
    res.on = ((event: string, handler: () => void) => {
      if (event === 'finish') fastifySaw.push(raw.url!);
      return on(event, handler);
    }) as ServerResponse['on'];
    listener!(raw, res);
  };
  return { ...testNode, app, fastifySaw, door: (injected) => inject(dispatch, injected) };
}

/** What a client sees of an answer, but for the `Date` header. */
export function seen(response: Response): { status: number; headers: Record<string, unknown>; body: string } {
  const { date: _date, ...headers } = response.headers;
  return { status: response.statusCode, headers, body: response.body };
}
