import { Server, ServerCredentials, status, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Clock, TimerHandle } from '../clock/clock.js';
import { AccessPort } from '../adapters/access.js';
import { LimitsPort } from '../adapters/limits.js';
import { XDS_DEFAULTS, type XdsConfig } from './declaration.js';
import type { Logger } from '../log/logger.js';
import type { ServiceViews } from '../views/service-views.js';
import { XdsAccess, type CallIdentity, type XdsAccessPorts } from './access.js';
import { XdsCatalog } from './catalog.js';
import type { XdsLbPolicy } from './declaration.js';
import { clientFields } from './client-log.js';
import { installPreFramedSend } from './grpc-framing.js';
import { NameShares } from './name-shares.js';
import { resourceNameOf } from './names.js';
import type { XdsProtos } from './protos.js';
import { FRAME_BYTES_PER_TURN, ResponseEncoder } from './responses.js';
import { metricsPortOf } from '../adapters/metrics.js';
import type { AdapterRecorders, OperationRecorder, HeldPoolRecorder } from '../metrics/adapter-metrics.js';
import type { XdsRecorder } from '../metrics/dns-xds-recorders.js';
import { outcomeOfGrpcStatus, STREAMS_POOL_LABEL, XDS_ADAPTER, XDS_OPERATIONS } from './metrics.js';
import { DeltaAdsStream, type DeltaDiscoveryRequest, type DeltaDiscoveryResponse } from './delta-stream.js';
import { AdsStream, StreamRefusal, type AdsStreamComponents, type DiscoveryRequest, type DiscoveryResponse, type StreamAccess, type XdsStats } from './stream.js';
import { WILDCARD_UNITS_PER_TURN, WildcardSets, type WildcardSet } from './wildcard-set.js';

/** What the server pushes to and feeds requests into: a state-of-the-world or an incremental stream. */
interface PushedStream<Request> {
  request(request: Request): void;
  changed(names: ReadonlySet<string>): void;
  policyInUse(): XdsLbPolicy | null;
  wildcardPolicy(): XdsLbPolicy | null;
  wildcardChanged(set: WildcardSet): void;
  close(): void;
}

export interface XdsServerComponents {
  views: ServiceViews;
  clock: Clock;
  /** The contract's logger (src/log/sampled.ts: redacted, repeated lines sampled). */
  logger: Logger;
  protos: XdsProtos;
  /** The contract's access and limits ports (the peer's); none: dev mode, no rate limit (tests). */
  ports?: XdsAccessPorts;
  /** The region of a zone (the peers' configuration: `RegistryReads.regionOfZone`); none: no zone has one (tests). */
  regionOfZone?: (zone: string) => string | undefined;
}

/** The xDS settings beyond these have defaults (XDS_DEFAULTS): tests name what they try. */
export interface XdsServerInit extends Pick<XdsConfig, 'namespaces' | 'lbPolicy' | 'pushCoalesceMs'>, Partial<Pick<XdsConfig, 'allowAnonymous' | 'streamsMax' | 'resourceNamesPerPrincipalMax'>> {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** The peer's certificate and key: ADS is then served over TLS. */
  tls?: { cert: Buffer; key: Buffer };
  /** Units of work per turn of a wildcard set's build (WILDCARD_UNITS_PER_TURN; tests pick a small one). */
  wildcardUnitsPerTurn?: number;
  /** Bytes of a response's frame written per turn (FRAME_BYTES_PER_TURN; tests pick a small one). */
  frameBytesPerTurn?: number;
  /** Most resources of an incremental response (DELTA_RESOURCES_PER_RESPONSE; tests pick a small one). */
  deltaResourcesPerResponse?: number;
}

/** Ports of a peer with no token and no rate limit (unit tests of other concerns). */
export function devPorts(clock: Clock): XdsAccessPorts {
  const limits = new LimitsPort(clock, { rateLimitPerSecond: 0, rateLimitLoopbackPerSecond: 0, rateLimitBurst: 1, rateLimitClientsMax: 1, heldSharePerPrincipalRatio: 0.25 });
  return { access: new AccessPort([], limits), limits };
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
  readonly stats: XdsStats = { streams: 0, requests: 0, acks: 0, nacks: 0, responses: 0, unknownTypes: 0, refused: 0 };
  readonly catalog: XdsCatalog;
  /** The sets wildcard subscriptions get, built in turns. */
  readonly wildcard: WildcardSets;
  readonly access: XdsAccess;
  readonly framedSend: boolean;
  /** Resource names held per principal (read by tests and metrics). */
  readonly names: NameShares;
  private readonly server = new Server();
  /** The open streams, each with what gives its slot in the peer's pool back, and what ends it for a failure (INTERNAL). */
  private readonly streams = new Map<PushedStream<never>, { release: () => void; failed: (error: unknown) => void }>();
  /** How many open streams use each balancing policy: the catalog keeps a policy's resources while one does. */
  private readonly policyStreams = new Map<XdsLbPolicy, number>();
  private readonly dirty = new Set<string>();
  private flushTimer: TimerHandle | null = null;
  private unsubscribe: (() => void) | null;
  private boundPort = 0;
  private readonly responses: ResponseEncoder;
  /** The metrics port's recorders (metrics.ts): requests per RPC, the streams pool, pushes, ACKs/NACKs by type. */
  private readonly recorders: AdapterRecorders;
  private readonly streamsPool: HeldPoolRecorder;
  private readonly typed: XdsRecorder;
  private readonly sotwRequests: OperationRecorder;
  private readonly deltaRequests: OperationRecorder;
  /** When the first change of the window being coalesced came (the peer's clock), for the push delay. */
  private windowChangedAtMs = 0;

  constructor(
    private readonly components: XdsServerComponents,
    private readonly init: XdsServerInit,
  ) {
    const log = components.logger;
    /** Whether shared responses go out as their own frame (grpc-framing.ts); false with a grpc-js that lacks the hook. */
    this.framedSend = installPreFramedSend();
    this.names = new NameShares(init.resourceNamesPerPrincipalMax ?? XDS_DEFAULTS.resourceNamesPerPrincipalMax);
    this.access = new XdsAccess(components.ports ?? devPorts(components.clock), {
      namespaces: init.namespaces,
      allowAnonymous: init.allowAnonymous ?? XDS_DEFAULTS.allowAnonymous,
      streamsMax: init.streamsMax ?? XDS_DEFAULTS.streamsMax,
    });
    const metrics = metricsPortOf(components.ports);
    this.recorders = metrics.adapter(XDS_ADAPTER, XDS_OPERATIONS);
    this.streamsPool = this.recorders.pool(STREAMS_POOL_LABEL, this.access.pool);
    this.typed = metrics.xds;
    this.sotwRequests = this.recorders.operation('StreamAggregatedResources');
    this.deltaRequests = this.recorders.operation('DeltaAggregatedResources');
    this.responses = new ResponseEncoder((response) => components.protos.frameResponse(response), {
      writer: (response) => components.protos.responseWriter(response),
      bytesPerTurn: Math.max(1, init.frameBytesPerTurn ?? FRAME_BYTES_PER_TURN),
      later: (run) => components.clock.setTimeout(run, 0),
    });
    this.catalog = new XdsCatalog(
      {
        views: components.views,
        protos: components.protos,
        ...(components.regionOfZone ? { regionOfZone: components.regionOfZone } : {}),
        onSkipped: (name, skipped) => log.warn({ resource: name, ...skipped }, 'xds: instances left out of a ClusterLoadAssignment (a host that is no IP address, or an address listed twice)'),
      },
      init,
    );
    this.wildcard = new WildcardSets(
      {
        catalog: this.catalog,
        views: components.views,
        clock: components.clock,
        failed: (error, what) =>
          what === 'build' ? log.error({ err: error }, 'xds: a wildcard set could not be built; the streams waiting for it are ended') : log.error({ err: error }, 'xds: a wildcard push failed'),
      },
      { namespaces: init.namespaces, unitsPerTurn: Math.max(1, init.wildcardUnitsPerTurn ?? WILDCARD_UNITS_PER_TURN) },
    );
    this.unsubscribe = components.views.onChange((change) => {
      if (!this.catalog.exposes(change.namespace)) return;
      this.wildcard.changed(change.namespace, change.service);
      if (this.dirty.size === 0) this.windowChangedAtMs = components.clock.nowMs();
      this.dirty.add(resourceNameOf(change.namespace, change.service));
      this.flushTimer ??= components.clock.setTimeout(() => {
        // Nothing may escape a timer's callback (it would end the process); a stream's failure ends that stream (`follow`).
        try {
          this.flush();
        } catch (error) {
          log.error({ err: error }, 'xds: a push failed');
        }
      }, init.pushCoalesceMs);
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
    this.wildcard.close();
    for (const [stream, { release }] of this.streams) {
      stream.close();
      release();
    }
    this.streams.clear();
    this.policyStreams.clear();
    // Open ADS streams never end by themselves: a graceful shutdown would wait for them forever.
    this.server.forceShutdown();
  }

  /**
   * Pushes what changed in the window to every stream: at once to the subscriptions that name
   * resources, and to the wildcard subscriptions of each policy once the set built after these
   * changes is complete (wildcard-set.ts), every such stream the same set.
   */
  flush(): void {
    this.flushTimer = null;
    if (this.dirty.size === 0) return;
    const names = new Set(this.dirty);
    this.dirty.clear();
    const windowChangedAtMs = this.windowChangedAtMs;
    this.pushed(windowChangedAtMs, () => {
      for (const stream of this.streams.keys()) stream.changed(names);
    });
    const policies = new Set<XdsLbPolicy>();
    for (const stream of this.streams.keys()) {
      const policy = stream.wildcardPolicy();
      if (policy !== null) policies.add(policy);
    }
    for (const policy of policies) {
      // Pushes queued for the same next build are one push (the key). A build that failed ends
      // the streams it was for (INTERNAL: they reconnect and ask again), as a failed answer does.
      this.wildcard.when(
        policy,
        (set) =>
          this.pushed(windowChangedAtMs, () => {
            for (const stream of this.streams.keys()) if (stream.wildcardPolicy() === policy) stream.wildcardChanged(set);
          }),
        'push',
        (error) => {
          for (const [stream, { failed }] of this.streams) if (stream.wildcardPolicy() === policy) failed(error);
        },
      );
    }
  }

  /**
   * A stream of `policy` ended: once none is left, the resources built for it are not kept
   * (a policy no client uses would keep every service's bytes until the peer stops).
   */
  private policyLeft(policy: XdsLbPolicy): void {
    const count = (this.policyStreams.get(policy) ?? 0) - 1;
    if (count > 0) {
      this.policyStreams.set(policy, count);
      return;
    }
    this.policyStreams.delete(policy);
    this.catalog.forgetPolicy(policy);
    this.wildcard.forgetPolicy(policy);
  }

  /** One push: streams sent the same resources share one response, encoded once (responses.ts). */
  private pushed(windowChangedAtMs: number, run: () => void): void {
    const responsesBefore = this.stats.responses;
    this.responses.push(() => this.catalog.push(run));
    // Each response written is a push, timed from the window's first change (the coalescing included).
    const pushed = this.stats.responses - responsesBefore;
    if (pushed > 0) this.recorders.pushes.pushed(windowChangedAtMs, pushed);
  }

  /** Serves one StreamAggregatedResources call (the gRPC server's handler; tests pass a fake call). */
  attach(call: ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    this.follow(call, this.sotwRequests, (access, failed) => new AdsStream(call, this.streamComponents(failed), access));
  }

  /** Serves one DeltaAggregatedResources call (incremental xDS). */
  attachDelta(call: ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>): void {
    this.follow(call, this.deltaRequests, (access, failed) => new DeltaAdsStream(call, this.streamComponents(failed), access));
  }

  private streamComponents(failed: (error: unknown) => void): AdsStreamComponents {
    const { catalog, stats, responses, names, typed, wildcard } = this;
    const later = (run: () => void) => {
      this.components.clock.setTimeout(run, 0);
    };
    const perResponse = this.init.deltaResourcesPerResponse;
    return { catalog, logger: this.components.logger, stats, responses, names, lbPolicy: this.init.lbPolicy, typed, wildcard, failed, later, ...(perResponse ? { deltaResourcesPerResponse: perResponse } : {}) };
  }

  /** Ends a call with a refusal's status (counted, and logged: the contract's logger samples a flood of them). */
  private refuse(call: ServerDuplexStream<unknown, unknown>, refusal: StreamRefusal, opened: boolean): void {
    this.stats.refused += 1;
    this.components.logger.warn(clientFields({ code: status[refusal.code], reason: refusal.message, peer: call.getPeer?.() ?? 'unknown' }), opened ? 'xds: a request was refused; the stream is ended' : 'xds: a stream was refused');
    call.emit('error', { code: refusal.code, details: refusal.message });
  }

  private follow<Request>(
    call: ServerDuplexStream<Request, unknown> & CallIdentity,
    requests: OperationRecorder,
    create: (access: StreamAccess, failed: (error: unknown) => void) => PushedStream<Request>,
  ): void {
    const admittedAtMs = requests.start();
    const admitted = this.access.admit(call);
    if (admitted instanceof StreamRefusal) {
      // A refused stream is a refused request of its RPC; a refused slot is counted at its cap too.
      if (admitted.cap) this.streamsPool.refused(admitted.cap);
      requests.done(outcomeOfGrpcStatus(admitted.code), admittedAtMs);
      this.refuse(call, admitted, false);
      return;
    }
    // A request or an answer that makes building fail must not take the peer down: end this stream only.
    const failed = (error: unknown) => {
      if (!this.streams.has(stream)) return;
      this.components.logger.error({ err: error }, 'xds: cannot answer a request; the stream is ended');
      end();
      call.emit('error', { code: status.INTERNAL, details: 'the registry could not build a response' });
    };
    const stream = create(admitted.access, failed);
    this.streams.set(stream, { release: admitted.release, failed });
    this.stats.streams += 1;
    // The policy its first request chose, counted while the stream is open.
    let policy: XdsLbPolicy | null = null;
    const end = () => {
      stream.close();
      admitted.release();
      this.streams.delete(stream);
      if (policy !== null) this.policyLeft(policy);
      policy = null;
    };
    call.on('data', (request: Request) => {
      if (!this.streams.has(stream)) return;
      const startedMs = requests.start();
      try {
        const limited = admitted.checkRate();
        if (limited) throw limited;
        try {
          stream.request(request);
        } finally {
          if (policy === null && this.streams.has(stream)) {
            policy = stream.policyInUse();
            if (policy !== null) this.policyStreams.set(policy, (this.policyStreams.get(policy) ?? 0) + 1);
          }
        }
        requests.done('ok', startedMs);
      } catch (error) {
        if (error instanceof StreamRefusal) {
          requests.done(outcomeOfGrpcStatus(error.code), startedMs);
          end();
          this.refuse(call, error, true);
          return;
        }
        requests.done('error', startedMs);
        failed(error);
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
