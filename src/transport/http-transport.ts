import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { Agent, request, type Dispatcher } from 'undici';
import { LineTooLongError, splitLines } from './lines.js';
import { signedHeaders } from '../security/peer-signature.js';
import { PeerTrafficCounts } from './peer-traffic.js';
import {
  classifyFailure,
  PeerCallError,
  requestJson,
  type CallOptions,
  type PeerDescriptor,
  type PeerMethod,
  type PeerTransport,
  type SnapshotStreamRequest,
  type StreamOptions,
} from './transport.js';

export interface HttpTransportOptions {
  /** Most sockets kept open to one peer. */
  connectionsPerPeer: number;
  /** How long opening a connection may take. */
  connectTimeoutMs: number;
  /** This peer's region: calls to peers of other regions are gzip-compressed. */
  selfRegion: string;
  /** Cross-region bodies at least this large are compressed. */
  compressMinBytes: number;
  /** This peer's id: names the signer of each call. */
  selfId: string;
  /** When set, every call is signed with it (see security/peer-signature.ts). */
  clusterSecret?: string | null;
  /** TLS towards the peers: the CA their certificates chain to, and this peer's certificate for mTLS. */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** Wall clock for signatures (epoch ms); Date.now by default. */
  nowMs?: () => number;
}

/** Bytes and calls to one peer, counted on the request and answer bodies as sent (compressed or not). */
export interface PeerTraffic {
  calls: number;
  bytesSent: number;
  bytesReceived: number;
}

/**
 * The wall-clock time (epoch ms, the caller's clock) after which the caller no longer waits for
 * the answer: sent with every peer call.
 */
export const DEADLINE_HEADER = 'x-registry-deadline';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * The production transport: `POST {peer.url}/v1/peer/{method}` with a JSON body, through
 * its own undici Agent (keep-alive sockets, no global dispatcher). Every failure becomes a
 * `PeerCallError` whose kind (congestion / transient / permanent) drives the retry. With a
 * cluster secret every call is signed over the bytes as sent (after gzip); with TLS options
 * the agent trusts the peers' CA and presents this peer's certificate (mTLS).
 */
export class HttpTransport implements PeerTransport {
  private readonly agent: Agent;
  private readonly traffic = new Map<string, PeerTraffic>();
  /** Bytes by peer, call and direction, both as caller (here) and as responder (the peer routes count into it). */
  readonly peerBytes = new PeerTrafficCounts();

  constructor(private readonly options: HttpTransportOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerPeer,
      connect: {
        timeout: options.connectTimeoutMs,
        ...(options.tls?.ca ? { ca: options.tls.ca } : {}),
        ...(options.tls?.cert && options.tls.key ? { cert: options.tls.cert, key: options.tls.key } : {}),
      },
      keepAliveTimeout: 30_000,
    });
  }

  async call(peer: PeerDescriptor, method: PeerMethod, body: unknown, options: CallOptions): Promise<unknown> {
    const { path, payload, headers } = await this.prepare(peer, method, body);
    // When this call is given up: a peer that stood still skips it unanswered past then (http/abandoned-calls.ts).
    headers[DEADLINE_HEADER] = String((this.options.nowMs?.() ?? Date.now()) + options.timeoutMs);
    const counters = this.countersFor(peer.id);
    counters.calls += 1;
    const sentBytes = Buffer.byteLength(payload);
    counters.bytesSent += sentBytes;
    this.peerBytes.count(peer.id, method, 'sent', sentBytes);
    let statusCode: number;
    let text: string;
    try {
      const response = await request(`${peer.url}${path}`, {
        method: 'POST',
        body: payload,
        headers,
        dispatcher: this.agent,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      statusCode = response.statusCode;
      const raw = Buffer.from(await response.body.arrayBuffer());
      counters.bytesReceived += raw.length;
      this.peerBytes.count(peer.id, method, 'received', raw.length);
      text = (response.headers['content-encoding'] === 'gzip' ? await gunzipAsync(raw) : raw).toString('utf8');
    } catch (error) {
      throw failedCall(method, peer, error);
    }
    if (statusCode >= 300) throw answeredError(method, peer, statusCode, text);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new PeerCallError(`${method} to ${peer.id} answered a body that is not JSON`, 'transient', statusCode);
    }
  }

  /**
   * `POST /v1/peer/snapshot-stream`, its NDJSON answer yielded line by line as the bytes come
   * (lines.ts). The body is read only as fast as the caller takes lines, so undici stops
   * reading the socket while a frame is being applied (backpressure towards the serving peer).
   * Never compressed: the stream is sent as it is made, and start-up joins are rare.
   */
  async *streamSnapshot(peer: PeerDescriptor, streamRequest: SnapshotStreamRequest, options: StreamOptions): AsyncGenerator<string> {
    const method = 'snapshot-stream';
    const { path, payload, headers } = await this.prepare(peer, method, streamRequest, false);
    const counters = this.countersFor(peer.id);
    counters.calls += 1;
    counters.bytesSent += Buffer.byteLength(payload);
    this.peerBytes.count(peer.id, method, 'sent', Buffer.byteLength(payload));
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${peer.url}${path}`, {
        method: 'POST',
        body: payload,
        headers,
        dispatcher: this.agent,
        headersTimeout: options.idleTimeoutMs,
        bodyTimeout: options.idleTimeoutMs,
        signal: AbortSignal.timeout(options.maxDurationMs),
      });
    } catch (error) {
      throw failedCall(method, peer, error);
    }
    if (response.statusCode >= 300) {
      const text = Buffer.from(await response.body.arrayBuffer().catch(() => new ArrayBuffer(0))).toString('utf8');
      throw answeredError(method, peer, response.statusCode, text);
    }
    try {
      for await (const line of splitLines(response.body, options.maxLineBytes)) {
        counters.bytesReceived += line.bytes;
        this.peerBytes.count(peer.id, method, 'received', line.bytes);
        yield line.text;
      }
    } catch (error) {
      if (error instanceof LineTooLongError) throw error;
      throw failedCall(method, peer, error);
    } finally {
      // A caller that stops early (a bad frame) leaves the rest unread: drop the connection.
      if (!response.body.readableEnded) response.body.destroy();
    }
  }

  /** The path, the body as sent (gzip towards another region when large) and the headers, signed when a secret is set. */
  private async prepare(peer: PeerDescriptor, method: string, body: unknown, compress = true): Promise<{ path: string; payload: string | Buffer; headers: Record<string, string> }> {
    const json = requestJson(body);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    let payload: string | Buffer = json;
    if (compress && peer.region !== this.options.selfRegion) {
      headers['accept-encoding'] = 'gzip';
      if (Buffer.byteLength(json) >= this.options.compressMinBytes) {
        payload = await gzipAsync(json);
        headers['content-encoding'] = 'gzip';
      }
    }
    const path = `/v1/peer/${method}`;
    if (this.options.clusterSecret) {
      const nowMs = this.options.nowMs?.() ?? Date.now();
      Object.assign(headers, signedHeaders(this.options.clusterSecret, { method: 'POST', path, peerId: this.options.selfId, body: payload, nowMs }));
    }
    return { path, payload, headers };
  }

  /** Traffic to each peer so far. */
  trafficByPeer(): Record<string, PeerTraffic> {
    return Object.fromEntries([...this.traffic].map(([id, counters]) => [id, { ...counters }]));
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private countersFor(peerId: string): PeerTraffic {
    let counters = this.traffic.get(peerId);
    if (!counters) {
      counters = { calls: 0, bytesSent: 0, bytesReceived: 0 };
      this.traffic.set(peerId, counters);
    }
    return counters;
  }
}

/** A call that got no answer: refused, reset, timed out (`ETIMEDOUT` for a timeout, whichever timer fired). */
function failedCall(method: string, peer: PeerDescriptor, error: unknown): PeerCallError {
  const name = (error as { name?: string }).name;
  const code = name === 'TimeoutError' ? 'ETIMEDOUT' : (error as { code?: unknown }).code;
  return new PeerCallError(`${method} to ${peer.id} failed: ${(error as Error).message}`, 'transient', undefined, typeof code === 'string' ? code : undefined);
}

/** A call the peer answered with an error status: its `{code}` when the body has one. */
function answeredError(method: string, peer: PeerDescriptor, statusCode: number, text: string): PeerCallError {
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { code?: string }).code;
  } catch {
    code = undefined;
  }
  return new PeerCallError(`${method} to ${peer.id} answered ${statusCode}: ${text.slice(0, 200)}`, classifyFailure(statusCode), statusCode, code);
}
