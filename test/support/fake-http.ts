import type { HttpLayer, HttpRequest, HttpResponse } from '../../src/client/http.js';
import type { Instance } from '../../src/client/types.js';

/** A request the client sent, as the fake saw it. */
export interface SeenRequest {
  peer: string;
  method: string;
  path: string;
  body: unknown;
  atMs: number;
}

/** An answer: a status with a JSON (or text) body, a stream, a refused connection, or no answer at all. */
export type FakeReply =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { stream: FakeStream }
  | 'refuse'
  | 'hang';

export type FakeHandler = (request: SeenRequest) => FakeReply;

/** The body of a response that arrives piece by piece: the test pushes text, ends or breaks it. */
export class FakeStream {
  private readonly chunks: (Uint8Array | Error | null)[] = [];
  private wake: (() => void) | undefined;
  /** True once the client aborted its reading. */
  aborted = false;
  ended = false;

  push(text: string): void {
    this.enqueue(new TextEncoder().encode(text));
  }

  /** The peer ends the stream cleanly. */
  end(): void {
    this.ended = true;
    this.enqueue(null);
  }

  /** The connection breaks. */
  fail(message = 'other side closed'): void {
    this.ended = true;
    this.enqueue(Object.assign(new Error(message), { code: 'UND_ERR_SOCKET' }));
  }

  /** Called when the client aborts. */
  abort(): void {
    this.aborted = true;
    this.enqueue(Object.assign(new Error('aborted'), { name: 'AbortError' }));
  }

  async *iterate(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const next = this.chunks.shift();
      if (next === undefined) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      if (next === null) return;
      if (next instanceof Error) throw next;
      yield next;
    }
  }

  private enqueue(item: Uint8Array | Error | null): void {
    this.chunks.push(item);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** One server-sent event as a peer writes it. */
export function sse(event: string, data: unknown, id?: number): string {
  return `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** An instance object as peers answer it. */
export function fakeInstance(instanceId: string, overrides: Partial<Instance> = {}): Instance {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId,
    host: '10.0.0.1',
    port: 8080,
    securePort: null,
    status: 'UP',
    weight: 1,
    zone: '',
    metadata: {},
    owner: 'peer-a',
    version: '000000000001.000000.peer-a',
    leaseDurationMs: 30_000,
    leaseExpiresInMs: 30_000,
    leaseLive: true,
    evictionHeld: false,
    registeredAtMs: 0,
    lastUpdatedAtMs: 0,
    ...overrides,
  };
}

function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' });
}

/**
 * An in-process HTTP layer for the client's unit tests: each peer URL answers through a
 * handler the test sets (no handler: connection refused), and every request is recorded. No
 * socket, no real time.
 */
export class FakeHttp implements HttpLayer {
  readonly requests: SeenRequest[] = [];
  readonly streams: { peer: string; path: string; stream: FakeStream }[] = [];
  private readonly handlers = new Map<string, FakeHandler>();
  closed = false;

  constructor(private readonly nowMs: () => number = () => 0) {}

  /** Sets how `peer` answers. */
  peer(peer: string, handler: FakeHandler): this {
    this.handlers.set(peer, handler);
    return this;
  }

  /** `peer` refuses every connection from now on (and breaks its open streams). */
  down(peer: string): void {
    this.handlers.delete(peer);
    for (const open of this.streams) if (open.peer === peer && !open.stream.ended) open.stream.fail('ECONNRESET');
  }

  /** Requests to `peer` matching `method` and a path prefix. */
  seen(peer: string | null, method: string, pathPrefix: string): SeenRequest[] {
    return this.requests.filter((r) => (peer === null || r.peer === peer) && r.method === method && r.path.startsWith(pathPrefix));
  }

  async request(peer: string, request: HttpRequest): Promise<HttpResponse> {
    const seen: SeenRequest = {
      peer,
      method: request.method,
      path: request.path,
      body: request.body === undefined ? undefined : JSON.parse(request.body),
      atMs: this.nowMs(),
    };
    this.requests.push(seen);
    if (request.signal?.aborted) throw abortError();
    const handler = this.handlers.get(peer);
    const reply: FakeReply = handler ? handler(seen) : 'refuse';
    if (reply === 'refuse') throw Object.assign(new Error(`connect ECONNREFUSED ${peer}`), { code: 'ECONNREFUSED' });
    if (reply === 'hang') {
      return new Promise((_resolve, reject) => {
        request.signal?.addEventListener('abort', () => reject(abortError()), { once: true });
      });
    }
    if ('stream' in reply) {
      const { stream } = reply;
      this.streams.push({ peer, path: request.path, stream });
      request.signal?.addEventListener('abort', () => stream.abort(), { once: true });
      return {
        status: 200,
        headers: { 'content-type': 'text/event-stream; charset=utf-8' },
        body: stream.iterate(),
        text: async () => '',
        dump: async () => {},
      };
    }
    const text = typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body);
    return {
      status: reply.status,
      headers: { 'content-type': 'application/json', ...reply.headers },
      body: (async function* () {
        yield new TextEncoder().encode(text);
      })(),
      text: async () => text,
      dump: async () => {},
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** What a fake registry peer holds. */
export interface FakePeerState {
  instances: Map<string, Instance>;
  /** What register and heartbeat answers say as `heartbeatIntervalMs`. */
  intervalMs: number;
  /** `/readyz` answers 503 while false. */
  ready: boolean;
  /** Every watch stream opened on this peer. */
  streams: FakeStream[];
}

export function fakePeerState(intervalMs = 1_000): FakePeerState {
  return { instances: new Map(), intervalMs, ready: true, streams: [] };
}

const INSTANCE_PATH = /^\/v1\/services\/([^/?]+)\/instances\/([^/?]+)(\/heartbeat|\/status)?(?:\?.*)?$/;

/**
 * A handler that behaves like a registry peer for the client's calls: register (201/200 with
 * `heartbeatIntervalMs`), heartbeat (404 when unknown), status, cancel, `/readyz`, and watch
 * streams that the test feeds itself (`state.streams`).
 */
export function fakeRegistryPeer(owner: string, state: FakePeerState = fakePeerState()): FakeHandler {
  let writes = 0;
  const answer = (instance: Instance, status = 200) => ({ status, body: { ...instance, heartbeatIntervalMs: state.intervalMs } });
  const notFound = { status: 404, body: { code: 'REG_ERR_INSTANCE_NOT_FOUND', message: 'unknown instance' } };
  return (request) => {
    if (request.path === '/readyz') return state.ready ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { code: 'REG_ERR_NOT_READY', message: 'syncing' } };
    if (request.path.startsWith('/v1/watch')) {
      const stream = new FakeStream();
      state.streams.push(stream);
      return { stream };
    }
    if (request.method === 'POST' && request.path === '/v1/instances') {
      const body = request.body as Partial<Instance> & { service: string; host: string; port: number };
      const instanceId = body.instanceId ?? `${body.host}:${body.port}`;
      const created = !state.instances.has(instanceId);
      writes += 1;
      const instance = fakeInstance(instanceId, {
        ...(body as Partial<Instance>),
        instanceId,
        owner,
        version: `${String(writes).padStart(12, '0')}.000000.${owner}`,
      });
      state.instances.set(instanceId, instance);
      return answer(instance, created ? 201 : 200);
    }
    const match = INSTANCE_PATH.exec(request.path);
    if (match) {
      const instanceId = decodeURIComponent(match[2]!);
      const known = state.instances.get(instanceId);
      if (!known) return notFound;
      if (request.method === 'DELETE' && match[3] === undefined) {
        state.instances.delete(instanceId);
        return { status: 200, body: { instanceId, cancelled: true } };
      }
      if (request.method === 'PUT' && match[3] === '/heartbeat') return answer(known);
      if (request.method === 'PUT' && match[3] === '/status') {
        const updated = { ...known, status: (request.body as { status: Instance['status'] }).status };
        state.instances.set(instanceId, updated);
        return answer(updated);
      }
    }
    return { status: 404, body: { code: 'REG_ERR_ROUTE_NOT_FOUND', message: `${request.method} ${request.path}` } };
  };
}
