import { gzipSync } from 'node:zlib';
import type { Clock, TimerHandle } from '../clock/clock.js';
import type { NacosConfig } from './declaration.js';
import type { Logger } from '../log/logger.js';
import type { HeldRefusal, HeldSlot } from '../security/held-shares.js';
import type { ServiceChange, ServiceViews } from '../views/service-views.js';
import { serviceInfoJson, type NacosHosts } from './documents.js';

/**
 * UDP push to Nacos 1.x clients. A client that lists a service with `udpPort` is pushed the
 * service (`{type: "dom", data, lastRefTime}`) on every change, until it stops listing for
 * `nacos.pushSubscriptionTtlMs`. A push is sent again every `nacos.pushRetryIntervalMs` until
 * the client answers `push-ack` with its `lastRefTime`, at most `nacos.pushRetriesMax` times
 * (its next list catches it up anyway). Payloads above 1 KB are gzipped, as Nacos does.
 *
 * Targets: the push goes to the address the list request came from, never to the `clientIP`
 * it claims, so no client can aim pushes at a third party. Bounded: each target holds a slot
 * of the peer's `nacos udp push targets` pool (the adapter contract's limits port:
 * `pushTargetsMax` in all, a share per principal, token or source address, of
 * `limits.heldSharePerPrincipalRatio`); past either the list is still answered but not
 * subscribed (the client's polling, every `cacheMillis`, brings changes), and the slot is
 * given back when the target expires.
 *
 * Cost per change: the targets are indexed by service, then by what they asked (name, group,
 * clusters), so a change finds them in one lookup; the hosts are the view's shared encoding
 * (documents.ts), and one datagram (gzipped above 1 KB) is built per variant asked and the same
 * bytes sent to every target that asked it. Acks in the form clients send them are read
 * without decoding the datagram to a string (ackRefTimeOf).
 */
export interface PushSocket {
  send(bytes: Buffer, port: number, address: string): void;
}

/** What a list with `udpPort` subscribes to. */
export interface PushRequest {
  address: string;
  port: number;
  namespace: string;
  service: string;
  group: string;
  /** `GROUP@@name` as the client asked (its cache key). */
  name: string;
  clusters: string;
  zones: ReadonlySet<string> | null;
}

interface Target extends PushRequest {
  key: string;
  slot: HeldSlot;
  serviceKey: string;
  /** What it asked of the service (`name`, `group`, `clusters`): its targets share a payload. */
  variant: string;
  /** `address|port`: where its acks come from (made once, not per push). */
  endpoint: string;
  expiresAtMs: number;
  /** The push waiting for this target's ack, if any. */
  pending: PendingPush | null;
}

interface PendingPush {
  target: Target;
  bytes: Buffer;
  lastRefTimeMs: number;
  attempts: number;
}

/** Payloads larger than this are gzipped (Nacos's threshold). */
export const GZIP_ABOVE_BYTES = 1_024;
/** The largest UDP payload (IPv4); a service whose push is larger is not pushed (its clients' polls carry it). */
export const UDP_MAX_BYTES = 65_507;
/** Acks larger than this are ignored unread. */
const ACK_MAX_BYTES = 4_096;

export type PushSettings = Pick<NacosConfig, 'pushSubscriptionTtlMs' | 'pushRetryIntervalMs' | 'pushRetriesMax'>;

export interface NacosPushComponents {
  clock: Clock;
  views: ServiceViews;
  socket: PushSocket;
  logger: Logger;
  /** The shared hosts encoding of a service now. */
  hostsOf: (namespace: string, service: string) => NacosHosts;
  /** Pushes written, each with the time since the change it carries (the adapter metrics' push recorder). */
  pushed?: (changedAtMs: number, count: number) => void;
}

/** Takes a held slot for a new target (the requester's share of the push-target pool), or says why not. */
export type HoldTarget = () => HeldSlot | HeldRefusal;

/** An IPv4-mapped IPv6 address as plain IPv4: the form push targets are kept and acks matched in. */
export function unmappedAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The push-ack prefix npm `nacos` and the Java client send (`JSON.stringify` / fastjson: no spaces). */
const COMPACT_ACK = Buffer.from('{"type":"push-ack","lastRefTime":');

/**
 * The `lastRefTime` a `push-ack` names, or null for anything else. The compact form clients
 * send is read from the bytes (no string, no object), the rest of the datagram unread: an ack
 * settles only a push to the address and port it came from. Any other form is parsed as JSON.
 */
export function ackRefTimeOf(message: Buffer): number | null {
  if (message.length > ACK_MAX_BYTES) return null;
  if (message.length > COMPACT_ACK.length && message.compare(COMPACT_ACK, 0, COMPACT_ACK.length, 0, COMPACT_ACK.length) === 0) {
    let value = 0;
    let at = COMPACT_ACK.length;
    // Up to 16 digits: a time in ms stays an exact integer.
    for (; at < message.length && at - COMPACT_ACK.length < 16; at++) {
      const digit = message[at]! - 0x30;
      if (digit < 0 || digit > 9) break;
      value = value * 10 + digit;
    }
    const next = message[at];
    // A number followed by `,` or `}` is the whole field; anything else (a fraction, a sign) takes the parser.
    if (at > COMPACT_ACK.length && (next === 0x2c || next === 0x7d)) return value;
  }
  let ack: { type?: unknown; lastRefTime?: unknown };
  try {
    ack = JSON.parse(message.toString('utf8')) as typeof ack;
  } catch {
    return null;
  }
  if (ack === null || typeof ack !== 'object' || ack.type !== 'push-ack' || typeof ack.lastRefTime !== 'number') return null;
  return ack.lastRefTime;
}

/** A push payload: `{type: "dom", data, lastRefTime}`, gzipped above GZIP_ABOVE_BYTES. */
export function pushPayload(data: string, lastRefTimeMs: number): Buffer {
  const bytes = Buffer.from(JSON.stringify({ type: 'dom', data, lastRefTime: lastRefTimeMs }));
  return bytes.length > GZIP_ABOVE_BYTES ? gzipSync(bytes) : bytes;
}

export class NacosPush {
  private readonly targets = new Map<string, Target>();
  /** The targets of each service (the read layer's key), by variant asked. */
  private readonly byService = new Map<string, Map<string, Set<Target>>>();
  /** The pushes waiting for their ack, by the `lastRefTime` an ack names (one per push of a change), then by target endpoint. */
  private readonly pendingByRefTime = new Map<number, Map<string, PendingPush>>();
  /** Services changed since the last flush, with when the first of those changes was seen (the push delay's start). */
  private readonly dirty = new Map<string, number>();
  private flushTimer: TimerHandle | null = null;
  private retryTimer: TimerHandle | null = null;
  private readonly sweepTimer: TimerHandle;
  private readonly unsubscribe: () => void;
  private lastRefTimeMs = 0;
  /** Pushes sent (first sends and retries), acks taken, pushes given up: for tests and metrics. */
  /** Payloads built (one per variant asked and change): for tests and metrics. */
  readonly counts = { sent: 0, acked: 0, givenUp: 0, tooLarge: 0, encodes: 0 };

  constructor(
    private readonly components: NacosPushComponents,
    private readonly settings: PushSettings,
  ) {
    this.unsubscribe = components.views.onChange((change) => this.onChange(change));
    this.sweepTimer = components.clock.setInterval(() => this.sweep(), Math.max(1_000, Math.floor(settings.pushSubscriptionTtlMs / 2)));
  }

  /** Push targets held now. */
  get size(): number {
    return this.targets.size;
  }

  /**
   * Subscribes (or renews) a target: a list with `udpPort` calls this each time. A new target
   * takes a slot with `hold`; refused, it is not subscribed and the refusal is answered.
   */
  subscribe(request: PushRequest, hold: HoldTarget): HeldRefusal | null {
    const serviceKey = this.components.views.keyOf(request.namespace, request.service);
    const key = `${request.address}|${request.port}|${serviceKey}|${request.name}|${request.clusters}`;
    const expiresAtMs = this.components.clock.nowMs() + this.settings.pushSubscriptionTtlMs;
    const known = this.targets.get(key);
    if (known) {
      known.expiresAtMs = expiresAtMs;
      // Listed again: the newest, so the last to be dropped when the tables are full.
      this.targets.delete(key);
      this.targets.set(key, known);
      return null;
    }
    const slot = hold();
    if (!slot.held) return slot;
    const variant = `${request.name}\n${request.group}\n${request.clusters}`;
    const target: Target = { ...request, key, slot, serviceKey, variant, endpoint: endpointOf(request.address, request.port), expiresAtMs, pending: null };
    this.targets.set(key, target);
    let variants = this.byService.get(serviceKey);
    if (!variants) this.byService.set(serviceKey, (variants = new Map()));
    let set = variants.get(variant);
    if (!set) variants.set(variant, (set = new Set()));
    set.add(target);
    return null;
  }

  /** An answer from a client's push socket: a `push-ack` from the target's own address and port ends its retries. */
  receive(message: Buffer, address: string, port: number): void {
    const lastRefTimeMs = ackRefTimeOf(message);
    if (lastRefTimeMs === null) return;
    const pending = this.pendingByRefTime.get(lastRefTimeMs)?.get(endpointOf(address, port));
    if (!pending) return;
    this.settle(pending);
    this.counts.acked += 1;
  }

  /** Stops pushing (shutdown). */
  close(): void {
    this.unsubscribe();
    this.sweepTimer.cancel();
    this.flushTimer?.cancel();
    this.retryTimer?.cancel();
    this.pendingByRefTime.clear();
    for (const target of this.targets.values()) target.slot.release();
    this.targets.clear();
    this.byService.clear();
  }

  private onChange(change: ServiceChange): void {
    const serviceKey = this.components.views.keyOf(change.namespace, change.service);
    if (!this.byService.has(serviceKey)) return;
    const key = `${change.namespace}\n${change.service}`;
    if (!this.dirty.has(key)) this.dirty.set(key, this.components.clock.nowMs());
    // Changes of one tick (a batch of replicated writes) make one push per service.
    this.flushTimer ??= this.components.clock.setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    this.flushTimer = null;
    const services = [...this.dirty];
    this.dirty.clear();
    for (const [item, changedAtMs] of services) {
      const [namespace, service] = item.split('\n') as [string, string];
      this.push(namespace, service, changedAtMs);
    }
  }

  /**
   * The `lastRefTime` of a push: the view's build time, as its lists answer (clients warn when a
   * list is older than what they were pushed), made unique, since an ack names its push by it.
   */
  private nextRefTimeMs(builtAtMs: number): number {
    this.lastRefTimeMs = Math.max(builtAtMs, this.lastRefTimeMs + 1);
    return this.lastRefTimeMs;
  }

  private push(namespace: string, service: string, changedAtMs: number): void {
    const variants = this.byService.get(this.components.views.keyOf(namespace, service));
    if (!variants) return;
    const nowMs = this.components.clock.nowMs();
    const hosts = this.components.hostsOf(namespace, service);
    const lastRefTimeMs = this.nextRefTimeMs(hosts.builtAtMs);
    let written = 0;
    const expired: Target[] = [];
    let waiting = this.pendingByRefTime.get(lastRefTimeMs);
    if (!waiting) this.pendingByRefTime.set(lastRefTimeMs, (waiting = new Map()));
    for (const targets of variants.values()) {
      let bytes: Buffer | null = null;
      for (const target of targets) {
        if (target.expiresAtMs <= nowMs) {
          expired.push(target);
          continue;
        }
        bytes ??= this.payloadOf(hosts, target, lastRefTimeMs);
        // A newer push replaces one still waiting for its ack.
        if (target.pending) this.settle(target.pending);
        if (bytes.length > UDP_MAX_BYTES) {
          // No datagram holds it: the client's next list (every cacheMillis) brings the change.
          this.counts.tooLarge += 1;
          continue;
        }
        const pending: PendingPush = { target, bytes, lastRefTimeMs, attempts: 0 };
        target.pending = pending;
        waiting.set(target.endpoint, pending);
        this.send(pending);
        written += 1;
      }
    }
    for (const target of expired) this.drop(target);
    if (waiting.size === 0) this.pendingByRefTime.delete(lastRefTimeMs);
    // The delay of a first send from the change it carries (retries are not counted again).
    if (written > 0) this.components.pushed?.(changedAtMs, written);
    this.retryTimer ??= this.components.clock.setTimeout(() => this.retry(), this.settings.pushRetryIntervalMs);
  }

  /** The datagram of a change for every target that asked what `target` asked (built once per variant and change). */
  private payloadOf(hosts: NacosHosts, target: Target, lastRefTimeMs: number): Buffer {
    this.counts.encodes += 1;
    const data = serviceInfoJson(hosts.json(target.group, target.zones, false), {
      name: target.name,
      groupName: target.group,
      clusters: target.clusters,
      lastRefTimeMs,
      checksum: String(hosts.revision),
    });
    return pushPayload(data, lastRefTimeMs);
  }

  private send(pending: PendingPush): void {
    pending.attempts += 1;
    this.counts.sent += 1;
    try {
      this.components.socket.send(pending.bytes, pending.target.port, pending.target.address);
    } catch (error) {
      this.components.logger.debug({ err: error, port: pending.target.port }, 'nacos: UDP push not sent');
    }
  }

  /** Sends every push still without an ack again, or gives it up after `pushRetriesMax` retries. */
  private retry(): void {
    this.retryTimer = null;
    const all: PendingPush[] = [];
    for (const waiting of this.pendingByRefTime.values()) for (const pending of waiting.values()) all.push(pending);
    for (const pending of all) {
      if (pending.attempts > this.settings.pushRetriesMax) {
        this.settle(pending);
        this.counts.givenUp += 1;
      } else {
        this.send(pending);
      }
    }
    if (this.pendingByRefTime.size > 0) this.retryTimer = this.components.clock.setTimeout(() => this.retry(), this.settings.pushRetryIntervalMs);
  }

  private settle(pending: PendingPush): void {
    const waiting = this.pendingByRefTime.get(pending.lastRefTimeMs);
    if (waiting?.get(pending.target.endpoint) === pending) {
      waiting.delete(pending.target.endpoint);
      if (waiting.size === 0) this.pendingByRefTime.delete(pending.lastRefTimeMs);
    }
    if (pending.target.pending === pending) pending.target.pending = null;
  }

  /** Drops the targets whose clients stopped listing. */
  private sweep(): void {
    const nowMs = this.components.clock.nowMs();
    for (const target of [...this.targets.values()]) if (target.expiresAtMs <= nowMs) this.drop(target);
  }

  private drop(target: Target): void {
    if (target.pending) this.settle(target.pending);
    if (this.targets.delete(target.key)) target.slot.release();
    const variants = this.byService.get(target.serviceKey);
    const set = variants?.get(target.variant);
    if (!variants || !set) return;
    set.delete(target);
    if (set.size === 0) variants.delete(target.variant);
    if (variants.size === 0) this.byService.delete(target.serviceKey);
  }
}

/** Where a target's acks come from, as a key. */
function endpointOf(address: string, port: number): string {
  return `${address}|${port}`;
}
