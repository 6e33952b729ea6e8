import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerClient } from '../../../src/cli/client.js';
import { closedBeforeAnswer, sendRetryingEarlyClose } from '../../../src/client/early-close.js';
import { createUndiciHttp, type HttpLayer } from '../../../src/client/http.js';

/**
 * The keep-alive race, made deterministic: a fake peer on 127.0.0.1 that closes the connection
 * on chosen requests without answering (as a peer does that closed an idle pooled connection
 * just as the request went out), and answers the others. undici then rejects with
 * `SocketError: other side closed` before any byte of the answer arrived.
 */
type Behaviour = 'close' | 'answer' | 'half-body';

class FakePeer {
  readonly requests: string[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly behaviours: (n: number) => Behaviour) {
    this.server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      let buffered = '';
      socket.on('data', (chunk) => {
        buffered += chunk.toString('latin1');
        // One request per head; the requests here carry small bodies with a content-length.
        for (;;) {
          const end = buffered.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buffered.slice(0, end);
          const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffered.length < end + 4 + length) return;
          buffered = buffered.slice(end + 4 + length);
          this.requests.push(head.split('\r\n')[0]!);
          const behaviour = this.behaviours(this.requests.length);
          if (behaviour === 'close') return void socket.destroy();
          if (behaviour === 'half-body') {
            socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok":');
            return void socket.destroy();
          }
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nkeep-alive: timeout=5\r\n\r\n{"ok":true}');
        }
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}`;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let peer: FakePeer | undefined;
let http: HttpLayer | undefined;
afterEach(async () => {
  await http?.close();
  await peer?.stop();
  http = undefined;
  peer = undefined;
});

async function started(behaviours: (n: number) => Behaviour): Promise<string> {
  peer = new FakePeer(behaviours);
  return peer.start();
}

describe('the TypeScript client (createUndiciHttp)', () => {
  it('sends a request again, once, when the connection closed before any byte of the answer', async () => {
    const url = await started((n) => (n === 1 ? 'close' : 'answer'));
    http = createUndiciHttp({ connectionsPerPeer: 1, connectTimeoutMs: 5_000 });
    const response = await http.request(url, { method: 'PUT', path: '/v1/services/orders/instances/i-1/heartbeat' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"ok":true}');
    expect(peer!.requests).toEqual(['PUT /v1/services/orders/instances/i-1/heartbeat HTTP/1.1', 'PUT /v1/services/orders/instances/i-1/heartbeat HTTP/1.1']);
  });

  it('on a pooled connection the peer closes as the next request goes out, the request still gets its answer, body included', async () => {
    const url = await started((n) => (n === 2 ? 'close' : 'answer'));
    http = createUndiciHttp({ connectionsPerPeer: 1, connectTimeoutMs: 5_000 });
    expect((await http.request(url, { method: 'GET', path: '/v1/services/orders' })).status).toBe(200);
    const body = JSON.stringify({ service: 'orders', host: '10.0.0.5', port: 8080 });
    const register = await http.request(url, { method: 'POST', path: '/v1/instances', headers: { 'content-type': 'application/json' }, body });
    expect(register.status).toBe(200);
    expect(peer!.requests).toEqual(['GET /v1/services/orders HTTP/1.1', 'POST /v1/instances HTTP/1.1', 'POST /v1/instances HTTP/1.1']);
  });

  it('retries once only: a peer that keeps closing is a failure for the caller (failover)', async () => {
    const url = await started(() => 'close');
    http = createUndiciHttp({ connectionsPerPeer: 1, connectTimeoutMs: 5_000 });
    await expect(http.request(url, { method: 'DELETE', path: '/v1/services/orders/instances/i-1' })).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(peer!.requests).toHaveLength(2);
  });

  it('never retries once the answer has begun: a body cut short is the caller\'s error', async () => {
    const url = await started(() => 'half-body');
    http = createUndiciHttp({ connectionsPerPeer: 1, connectTimeoutMs: 5_000 });
    const response = await http.request(url, { method: 'GET', path: '/v1/services/orders' });
    await expect(response.text()).rejects.toThrow();
    expect(peer!.requests).toHaveLength(1);
  });
});

describe('the command line (PeerClient)', () => {
  it('sends a call again, once, when the connection closed before any byte of the answer', async () => {
    const url = await started((n) => (n === 1 ? 'close' : 'answer'));
    const client = new PeerClient({ url, timeoutMs: 5_000 });
    const answer = await client.call('PUT', '/v1/services/orders/instances/i-1/heartbeat');
    expect(answer).toEqual({ status: 200, body: { ok: true } });
    expect(peer!.requests).toHaveLength(2);
  });

  it('reports the peer as unreachable when the retry fails too', async () => {
    const url = await started(() => 'close');
    const client = new PeerClient({ url, timeoutMs: 5_000 });
    await expect(client.call('GET', '/v1/services')).rejects.toThrow(/cannot reach .*other side closed/);
    expect(peer!.requests).toHaveLength(2);
  });
});

describe('sendRetryingEarlyClose', () => {
  const fail = (code: string) => Object.assign(new Error(code), { code });

  it.each([
    ['UND_ERR_SOCKET', true],
    ['ECONNRESET', true],
    ['EPIPE', true],
    ['ECONNREFUSED', false],
    ['UND_ERR_HEADERS_TIMEOUT', false],
    ['UND_ERR_ABORTED', false],
  ])('%s closed before the answer: %s', (code, expected) => {
    expect(closedBeforeAnswer(fail(code))).toBe(expected);
  });

  it('does not send again after an abort', async () => {
    const controller = new AbortController();
    let sends = 0;
    const send = async () => {
      sends += 1;
      controller.abort();
      throw fail('UND_ERR_SOCKET');
    };
    await expect(sendRetryingEarlyClose(send, controller.signal)).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(sends).toBe(1);
  });

  it('when the retry fails too, throws the first failure: a refused retry must not say the first request never arrived', async () => {
    // kill -9 as the peer answered: the first request may be applied, the retry meets a closed port.
    const errors = [fail('UND_ERR_SOCKET'), fail('ECONNREFUSED')];
    let sends = 0;
    await expect(
      sendRetryingEarlyClose(async () => {
        throw errors[sends++]!;
      }),
    ).rejects.toBe(errors[0]);
    expect(sends).toBe(2);
  });

  it('does not send again after another error', async () => {
    let sends = 0;
    await expect(
      sendRetryingEarlyClose(async () => {
        sends += 1;
        throw fail('ECONNREFUSED');
      }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(sends).toBe(1);
  });
});
