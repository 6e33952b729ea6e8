import { Server, ServerCredentials, status, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Clock, TimerHandle } from '../clock/clock.js';
import type { XdsConfig } from '../config/protocols.js';
import type { Logger } from '../log/logger.js';
import type { ServiceViews } from '../views/service-views.js';
import { XdsCatalog } from './catalog.js';
import { resourceNameOf } from './names.js';
import type { XdsProtos } from './protos.js';
import { ResponseEncoder } from './responses.js';
import { DeltaAdsStream, type DeltaDiscoveryRequest, type DeltaDiscoveryResponse } from './delta-stream.js';
import { AdsStream, BadRequestError, type DiscoveryRequest, type DiscoveryResponse, type XdsStats } from './stream.js';

/** What the server pushes to and feeds requests into: a state-of-the-world or an incremental stream. */
interface PushedStream<Request> {
  request(request: Request): void;
  changed(names: ReadonlySet<string>): void;
  close(): void;
}

export interface XdsServerComponents {
  views: ServiceViews;
  clock: Clock;
  logger: Logger;
  protos: XdsProtos;
}

export interface XdsServerInit extends Pick<XdsConfig, 'namespaces' | 'lbPolicy' | 'pushCoalesceMs'> {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** The peer's certificate and key: ADS is then served over TLS. */
  tls?: { cert: Buffer; key: Buffer };
}

/** gRPC's bind address for a host and port (an IPv6 literal goes in brackets). */
export function bindAddressOf(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The Aggregated Discovery Service (xDS v3: state of the world, and incremental) on a gRPC
 * server of its own.
 * Store changes reach it through the read layer (`views.onChange`); those of one window
 * (`pushCoalesceMs`, timed by the injected clock) are pushed to every concerned stream as
 * one response per resource type.
 */
export class XdsServer {
  readonly stats: XdsStats = { streams: 0, requests: 0, acks: 0, nacks: 0, responses: 0, unknownTypes: 0 };
  readonly catalog: XdsCatalog;
  private readonly server = new Server();
  private readonly streams = new Set<PushedStream<never>>();
  private readonly dirty = new Set<string>();
  private flushTimer: TimerHandle | null = null;
  private unsubscribe: (() => void) | null;
  private boundPort = 0;
  private readonly responses: ResponseEncoder;

  constructor(
    private readonly components: XdsServerComponents,
    private readonly init: XdsServerInit,
  ) {
    const log = components.logger;
    this.responses = new ResponseEncoder((response) => components.protos.encodeResponse(response));
    this.catalog = new XdsCatalog(
      {
        views: components.views,
        protos: components.protos,
        onSkipped: (name, skipped) => log.warn({ resource: name, ...skipped }, 'xds: instances left out of a ClusterLoadAssignment (a host that is no IP address, or an address listed twice)'),
      },
      init,
    );
    this.unsubscribe = components.views.onChange((change) => {
      if (!this.catalog.exposes(change.namespace)) return;
      this.dirty.add(resourceNameOf(change.namespace, change.service));
      this.flushTimer ??= components.clock.setTimeout(() => this.flush(), init.pushCoalesceMs);
    });
    this.server.addService(components.protos.ads, {
      StreamAggregatedResources: (call: ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => this.attach(call),
      DeltaAggregatedResources: (call: ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>) => this.attachDelta(call),
    });
  }

  /** The port it listens on (the picked one when asked for 0). */
  get port(): number {
    return this.boundPort;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  async start(): Promise<void> {
    const credentials = this.init.tls
      ? ServerCredentials.createSsl(null, [{ cert_chain: this.init.tls.cert, private_key: this.init.tls.key }], false)
      : ServerCredentials.createInsecure();
    this.boundPort = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(bindAddressOf(this.init.host, this.init.port), credentials, (error, port) =>
        error ? reject(bindError(error, this.init.port)) : resolve(port),
      );
    });
  }

  /** Stops taking streams, ends the open ones and stops pushing. */
  async close(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.flushTimer?.cancel();
    this.flushTimer = null;
    for (const stream of this.streams) stream.close();
    this.streams.clear();
    // Open ADS streams never end by themselves: a graceful shutdown would wait for them forever.
    this.server.forceShutdown();
  }

  /** Pushes what changed in the window to every stream. */
  flush(): void {
    this.flushTimer = null;
    if (this.dirty.size === 0) return;
    const names = new Set(this.dirty);
    this.dirty.clear();
    // One push: streams sent the same resources share one response, encoded once (responses.ts).
    this.responses.push(() => {
      for (const stream of this.streams) stream.changed(names);
    });
  }

  /** Serves one StreamAggregatedResources call (the gRPC server's handler; tests pass a fake call). */
  attach(call: ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    this.follow(call, new AdsStream(call, this.streamComponents()));
  }

  /** Serves one DeltaAggregatedResources call (incremental xDS). */
  attachDelta(call: ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>): void {
    this.follow(call, new DeltaAdsStream(call, this.streamComponents()));
  }

  private streamComponents() {
    return { catalog: this.catalog, logger: this.components.logger, stats: this.stats, responses: this.responses };
  }

  private follow<Request>(call: ServerDuplexStream<Request, unknown>, stream: PushedStream<Request>): void {
    this.streams.add(stream);
    this.stats.streams += 1;
    const end = () => {
      stream.close();
      this.streams.delete(stream);
    };
    call.on('data', (request: Request) => {
      try {
        stream.request(request);
      } catch (error) {
        if (error instanceof BadRequestError) {
          this.components.logger.warn({ reason: error.message }, 'xds: a request was refused; the stream is ended');
          end();
          call.emit('error', { code: status.INVALID_ARGUMENT, details: error.message });
          return;
        }
        // A request that makes building fail must not take the peer down: end this stream only.
        this.components.logger.error({ err: error }, 'xds: cannot answer a request; the stream is ended');
        end();
        call.emit('error', { code: status.INTERNAL, details: 'the registry could not build a response' });
      }
    });
    call.on('end', () => {
      end();
      call.end();
    });
    call.on('error', end);
    call.on('cancelled', end);
  }
}

/**
 * grpc-js reports a failed bind as "No address added ... errors: [listen EADDRINUSE ...]"
 * with no code: give it the listen error's code and the port, as Node's own listen errors
 * carry them, so that the peer's start-up line names the port and the flag (startup-failure.ts).
 */
function bindError(error: Error, port: number): Error {
  const code = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(error.message)?.[1];
  return code === undefined ? error : Object.assign(new Error(error.message), { code, port });
}
