import net from 'node:net';
import { seededRng, type Rng } from '../../src/clock/rng.js';

/** What the proxy does with traffic right now. */
export type ProxyMode =
  | 'pass'
  /** New and open connections are reset at once (a crashed or firewalled host that rejects). */
  | 'reset'
  /** Bytes are swallowed in both directions (a black hole: calls time out). */
  | 'blackhole'
  /** Requests reach the target, answers are swallowed (a one-way cut). */
  | 'drop-replies';

export interface FaultProxyOptions {
  /** Drives `dropRatio` (seeded, so a chaos run's choices repeat); a fixed seed by default. */
  rng?: Rng;
}

export interface ProxyTraffic {
  /** Bytes from the client side to the target. */
  upBytes: number;
  /** Bytes from the target back to the client side. */
  downBytes: number;
  connections: number;
  /** Connections cut by `dropRatio`. */
  dropped: number;
}

/**
 * A TCP proxy on 127.0.0.1 in front of one target port, for end-to-end fault injection
 * without touching the host's firewall: pass, reset, black hole, one-way cut, added delay,
 * random drops (a lossy link) and flapping. It counts the bytes it forwards (the benchmarks
 * read idle traffic from it). It only ever connects to 127.0.0.1.
 */
export class FaultProxy {
  mode: ProxyMode = 'pass';
  /** Added one-way delay per chunk, in ms. */
  delayMs = 0;
  /**
   * A lossy link: the share (0..1) of forwarded chunks after which the connection is cut, so
   * that calls fail at random (each side sees its socket closed). 0 forwards everything.
   */
  dropRatio = 0;
  readonly traffic: ProxyTraffic = { upBytes: 0, downBytes: 0, connections: 0, dropped: 0 };
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly rng: Rng;
  private flapTimer: NodeJS.Timeout | undefined;

  private constructor(
    /** Where connections go (on 127.0.0.1); change it with `retarget`. */
    public targetPort: number,
    options: FaultProxyOptions,
  ) {
    this.rng = options.rng ?? seededRng(0x5eed);
    this.server = net.createServer((client) => this.accept(client));
  }

  /** Starts a proxy on an ephemeral port of 127.0.0.1. */
  static async start(targetPort: number, options: FaultProxyOptions = {}): Promise<FaultProxy> {
    const proxy = new FaultProxy(targetPort, options);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Switches mode (and stops any flapping); open connections are cut so that the new mode
   * applies to every call.
   */
  set(mode: ProxyMode): void {
    clearTimeout(this.flapTimer);
    this.flapTimer = undefined;
    this.apply(mode);
  }

  /**
   * Points the proxy at another port of 127.0.0.1 (a peer restarted on a new port) and cuts
   * the open connections, which still lead to the old one. Mode, delay and drops stay.
   */
  retarget(targetPort: number): void {
    this.targetPort = targetPort;
    for (const socket of this.sockets) socket.destroy();
  }

  /** Back to a clean link: pass, no delay, no drops, no flapping. */
  reset(): void {
    this.set('pass');
    this.delayMs = 0;
    this.dropRatio = 0;
  }

  /** Alternates between `mode` and pass every `periodMs`, `times` times (bounded), then passes. */
  flap(mode: ProxyMode, periodMs: number, times: number): void {
    clearTimeout(this.flapTimer);
    let left = times;
    const step = () => {
      if (left-- <= 0) {
        this.flapTimer = undefined;
        return this.apply('pass');
      }
      this.apply(this.mode === 'pass' ? mode : 'pass');
      this.flapTimer = setTimeout(step, periodMs);
    };
    step();
  }

  /** True while a flap started by `flap()` is still toggling. */
  get flapping(): boolean {
    return this.flapTimer !== undefined;
  }

  async close(): Promise<void> {
    clearTimeout(this.flapTimer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private apply(mode: ProxyMode): void {
    this.mode = mode;
    if (mode !== 'pass') for (const socket of this.sockets) socket.destroy();
  }

  private accept(client: net.Socket): void {
    this.traffic.connections += 1;
    if (this.mode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    const target = net.connect(this.targetPort, '127.0.0.1');
    this.track(client);
    this.track(target);
    const pipe = (from: net.Socket, to: net.Socket, direction: 'up' | 'down') => {
      from.on('data', (chunk: Buffer) => {
        if (this.mode === 'blackhole' || (this.mode === 'drop-replies' && direction === 'down')) return;
        if (this.dropRatio > 0 && this.rng.next() < this.dropRatio) {
          this.traffic.dropped += 1;
          from.destroy();
          to.destroy();
          return;
        }
        if (direction === 'up') this.traffic.upBytes += chunk.length;
        else this.traffic.downBytes += chunk.length;
        if (this.delayMs > 0) setTimeout(() => to.writable && to.write(chunk), this.delayMs);
        else if (to.writable) to.write(chunk);
      });
      from.on('close', () => setTimeout(() => to.destroy(), this.delayMs));
      from.on('error', () => to.destroy());
    };
    pipe(client, target, 'up');
    pipe(target, client, 'down');
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }
}

/** A port nobody listens on right now (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
