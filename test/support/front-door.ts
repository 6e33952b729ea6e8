import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, type InjectOptions, type Response } from 'light-my-request';
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, vi } from 'vitest';
import { buildServer } from '../../src/http/server.js';
import type { HandBack } from '../../src/http/front-door.js';
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
  return { ...testNode, app, ...doorOf(app) };
}

/** The front door of a ready app: its server's own request listener, and the requests fastify saw through it. */
export function doorOf(app: FastifyInstance): Pick<Door, 'fastifySaw' | 'door'> {
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
  return { fastifySaw, door: (injected) => inject(dispatch, injected) };
}

/** What a client sees of an answer, but for the `Date` header. */
export function seen(response: Response): { status: number; headers: Record<string, unknown>; body: string } {
  const { date: _date, ...headers } = response.headers;
  return { status: response.statusCode, headers, body: response.body };
}

/** Two peers alike (same config, clock and seed): one is asked through its front door, the other straight through fastify. */
export interface Twins {
  through: Door;
  direct: Door;
}

/**
 * Opens peers for the tests of one file and closes them after each test: `open` one, or
 * `twins` alike.
 */
export function doorsClosedAfterEach(): { open(options?: Parameters<typeof openDoor>[0]): Promise<Door>; twins(options?: Parameters<typeof openDoor>[0]): Promise<Twins> } {
  const opened: Door[] = [];
  afterEach(async () => {
    for (const door of opened.splice(0)) await door.app.close();
  });
  const open = async (options: Parameters<typeof openDoor>[0] = {}) => {
    const door = await openDoor(options);
    opened.push(door);
    return door;
  };
  return { open, twins: async (options = {}) => ({ through: await open(options), direct: await open(options) }) };
}

/**
 * Sends `request` to both twins and expects the same answer from each, byte for byte but for
 * the `Date` header; returns the status and whether fastify saw the request on the front-door side.
 */
export async function both(twin: Twins, request: InjectOptions): Promise<{ status: number; fastify: boolean }> {
  twin.through.fastifySaw.length = 0;
  const through = await twin.through.door(request);
  const direct = await twin.direct.app.inject(request);
  const label = `${request.method ?? 'GET'} ${request.url} ${String(request.payload ?? '').slice(0, 120)} ${JSON.stringify(request.headers ?? {})}`;
  expect(seen(through), label).toEqual(seen(direct));
  return { status: through.statusCode, fastify: twin.through.fastifySaw.length > 0 };
}

/** A service's listing on a peer, as fastify answers it. */
export async function listing(door: Door, service = 'orders', namespace = 'default'): Promise<string> {
  return (await door.app.inject({ url: `/v1/services/${service}?namespace=${namespace}` })).body;
}

/**
 * What a shortcut tested on its own did: the answers it wrote (`res`), the bodies it handed
 * back (`handBack`), and the admissions it handed on (`handOn`, the guard's).
 */
export function shortcutOutcome(): {
  res: ServerResponse;
  written: { status: number; body: string }[];
  handedBack: (Buffer | Error)[];
  /** The write failures handed back with them (undefined where none was). */
  writeFailures: unknown[];
  handBack: HandBack;
  handOn: ReturnType<typeof vi.fn>;
} {
  const written: { status: number; body: string }[] = [];
  const res = {
    writeHead: (status: number) => written.push({ status, body: '' }),
    end: (text: string) => {
      written.at(-1)!.body = text;
    },
  } as unknown as ServerResponse;
  const handedBack: (Buffer | Error)[] = [];
  const writeFailures: unknown[] = [];
  const handBack: HandBack = (_raw, _res, body, handed) => {
    handedBack.push(body);
    writeFailures.push(handed.writeFailure?.error);
  };
  return { res, written, handedBack, writeFailures, handBack, handOn: vi.fn() };
}

/**
 * For a shortcut tested on its own whose write waits on its durability barrier: its client
 * goes away (`res.destroyed`), then `passBarrier` lets the write through; expects nothing
 * answered, timed (`observe`) or handed back.
 */
export async function expectNothingOnceClientLeft(
  outcome: { res: ServerResponse; written: unknown[]; handedBack: unknown[]; observe: ReturnType<typeof vi.fn> },
  passBarrier: () => void,
): Promise<void> {
  (outcome.res as { destroyed: boolean }).destroyed = true;
  passBarrier();
  await new Promise((resolve) => setImmediate(resolve));
  expect(outcome.written).toEqual([]);
  expect(outcome.observe).not.toHaveBeenCalled();
  expect(outcome.handedBack).toEqual([]);
}
