import type { Clock, TimerHandle } from '../clock/clock.js';
import { shuffled, type Rng } from '../clock/rng.js';
import type { MembershipView } from '../lease/reaper.js';
import type { Logger } from '../log/logger.js';
import { unreachablePeerLevel } from '../log/startup-grace.js';
import { callPeer } from '../transport/peer-answers.js';
import type { PingReqRequest, PingReqResponse, PingRequest, PingResponse } from '../transport/peer-calls.js';
import type { PeerDescriptor, PeerTransport } from '../transport/transport.js';
import { membersHash } from './messages.js';
import { nextState, type PeerState, type ProbeOutcome } from './state.js';

export interface MembershipComponents {
  clock: Clock;
  rng: Rng;
  transport: PeerTransport;
  logger: Logger;
}

export interface MembershipInit {
  self: PeerDescriptor;
  /** This process's incarnation: different at every start (a restart is told by it changing). */
  incarnation: string;
  /** Peers from the configuration; their URLs are never overwritten by gossip. */
  seeds: PeerDescriptor[];
  probeIntervalMs: number;
  probeTimeoutMs: number;
  indirectProbes: number;
  suspicionTimeoutMs: number;
}

/** Recheck pings in flight to one member at most (see `Membership.recheck`). */
const MAX_RECHECKS_IN_FLIGHT = 3;

/**
 * How often a member held suspect or down is pinged directly, beside the probe round: half
 * the probe timeout (250 ms in the lan profile), at least 50 ms. A recheck waits
 * `probeTimeoutMs`, two intervals; with up to three in flight a fresh ping goes out every
 * interval even while the last two wait out a partition. Pure.
 */
export function recheckIntervalMs(probeTimeoutMs: number): number {
  return Math.max(50, Math.round(probeTimeoutMs / 2));
}

/** What this peer knows about another one. */
export interface Member {
  descriptor: PeerDescriptor;
  state: PeerState;
  /** When it entered its current state. */
  sinceMs: number;
  /** Last successful probe or call, null before the first. */
  lastContactMs: number | null;
  /** The incarnation it last told us, null before it told any. */
  incarnation: string | null;
  fromConfig: boolean;
}

export interface MembershipListener {
  /** A peer was learnt (from the config or from gossip). */
  joined?(descriptor: PeerDescriptor): void;
  /** A peer was confirmed down (after suspicion). */
  down?(peerId: string): void;
  /** A peer that was down answers again. */
  up?(peerId: string): void;
  /**
   * A peer held suspect (not yet down) answers again: contact was lost for a while, so writes
   * to it may have failed or be stuck in calls that will time out.
   */
  recovered?(peerId: string): void;
  /** A peer started again (its incarnation changed), whether or not it was seen down. */
  restarted?(peerId: string): void;
}

/**
 * SWIM-style membership (Das et al.): each probe interval this peer pings the next member in
 * a shuffled round; a member that does not answer is asked about through `indirectProbes`
 * other members (ping-req) before it is suspected; a suspect that stays silent for
 * `suspicionTimeoutMs` is down. Down members are still probed, so they come back by
 * themselves. Every ping carries this peer's member list, so a new peer needs one seed.
 * Liveness comes only from this peer's own probes and calls (not from what others say), so
 * a one-way cut shows as it is from each side.
 */
export class Membership implements MembershipView {
  private readonly members = new Map<string, Member>();
  private readonly listeners: MembershipListener[] = [];
  private readonly probing = new Set<string>();
  /** How many recheck pings are in flight to each member (see `recheck`). */
  private readonly rechecking = new Map<string, number>();
  private round: string[] = [];
  /** The peer-list hash each peer answered last: its list need not be sent again while equal. */
  private readonly knownHashes = new Map<string, string>();
  private cachedHash: string | undefined;
  private timer: TimerHandle | undefined;
  private recheckTimer: TimerHandle | undefined;
  private readonly startedAtMs: number;
  private readonly log: Logger;

  constructor(
    private readonly components: MembershipComponents,
    private readonly init: MembershipInit,
  ) {
    this.startedAtMs = components.clock.nowMs();
    this.log = components.logger.child({ component: 'membership' });
    for (const seed of init.seeds) this.add(seed, true);
  }

  get self(): PeerDescriptor {
    return this.init.self;
  }

  subscribe(listener: MembershipListener): void {
    this.listeners.push(listener);
    for (const member of this.members.values()) listener.joined?.(member.descriptor);
  }

  start(): void {
    this.timer ??= this.components.clock.setInterval(() => this.tick(), this.init.probeIntervalMs);
    this.recheckTimer ??= this.components.clock.setInterval(() => this.recheckNotUp(), recheckIntervalMs(this.init.probeTimeoutMs));
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.recheckTimer?.cancel();
    this.recheckTimer = undefined;
  }

  isUp(peerId: string): boolean {
    if (peerId === this.init.self.id) return true;
    const state = this.members.get(peerId)?.state;
    return state === 'up' || state === 'suspect';
  }

  heldDown(peerId: string): boolean {
    return this.members.get(peerId)?.state === 'down';
  }

  downSinceMs(peerId: string): number | null {
    if (peerId === this.init.self.id) return null;
    const member = this.members.get(peerId);
    if (!member) return this.startedAtMs;
    return member.state === 'down' ? member.sinceMs : null;
  }

  /**
   * Since when every known peer has been up (none suspect or down): the latest time one of them
   * entered `up` (or was learnt), and at least this peer's start; null while one is not up.
   * A restarted owner holds the instances it has not heard since its restart until this is
   * one lease old (see heldAfterRestart in registry/visibility.ts).
   */
  allUpSinceMs(): number | null {
    let sinceMs = this.startedAtMs;
    for (const member of this.members.values()) {
      if (member.state !== 'up') return null;
      if (member.sinceMs > sinceMs) sinceMs = member.sinceMs;
    }
    return sinceMs;
  }

  othersUp(): boolean {
    for (const peerId of this.members.keys()) if (this.isUp(peerId)) return true;
    return false;
  }

  wholeRegionDown(peerId: string): boolean {
    const region = this.members.get(peerId)?.descriptor.region;
    if (region === undefined || region === this.init.self.region) return false;
    for (const member of this.members.values()) {
      if (member.descriptor.region === region && member.state !== 'down') return false;
    }
    return true;
  }

  livePeerIds(): string[] {
    return [this.init.self.id, ...[...this.members.values()].filter((m) => m.state !== 'down').map((m) => m.descriptor.id)];
  }

  /** Every other peer this one knows, whatever its state. */
  list(): Member[] {
    return [...this.members.values()];
  }

  get(peerId: string): Member | undefined {
    return this.members.get(peerId);
  }

  /** This peer and every peer it knows, for gossip. */
  descriptors(): PeerDescriptor[] {
    return [this.init.self, ...[...this.members.values()].map((m) => m.descriptor)];
  }

  /** Adds peers heard of through gossip. */
  learn(descriptors: PeerDescriptor[]): void {
    for (const descriptor of descriptors) this.add(descriptor, false);
  }

  /** A call to `peerId` succeeded: it is alive. */
  reportContact(peerId: string): void {
    this.observe(peerId, 'ack');
  }

  handlePing(request: PingRequest): PingResponse {
    this.updateSelfDescribed(request.from);
    this.noteIncarnation(request.from.id, request.incarnation);
    if (request.members) this.learn(request.members);
    // A peer we hold for suspect or down is talking to us: check it now rather than at its
    // turn in the probe round, so a healed partition is noticed within one round trip.
    const caller = this.members.get(request.from.id);
    if (caller && caller.state !== 'up') this.checkNow(caller);
    const hash = this.currentMembersHash();
    return {
      id: this.init.self.id,
      incarnation: this.init.incarnation,
      membersHash: hash,
      ...(request.membersHash === hash ? {} : { members: this.descriptors() }),
    };
  }

  async handlePingReq(request: PingReqRequest): Promise<PingReqResponse> {
    return { ok: await this.ping(request.target) };
  }

  /** One probe interval: probe the next member, and time out suspicions. */
  tick(): void {
    const nowMs = this.components.clock.nowMs();
    for (const member of this.members.values()) {
      if (member.state === 'suspect' && nowMs - member.sinceMs >= this.init.suspicionTimeoutMs) {
        this.observe(member.descriptor.id, 'suspicion-timeout');
      }
    }
    const target = this.nextTarget();
    if (target) void this.probe(target);
  }

  /** Every recheck interval: one direct ping to each member held suspect or down. */
  private recheckNotUp(): void {
    for (const member of this.members.values()) if (member.state !== 'up') void this.recheck(member);
  }

  /** Direct probe, then indirect probes through other live members. */
  async probe(member: Member): Promise<void> {
    const id = member.descriptor.id;
    if (this.probing.has(id)) return;
    this.probing.add(id);
    try {
      if (await this.ping(member.descriptor)) return this.observe(id, 'ack');
      const helpers = shuffled(
        this.components.rng,
        [...this.members.values()].filter((m) => m.state === 'up' && m.descriptor.id !== id),
      ).slice(0, this.init.indirectProbes);
      const answers = await Promise.all(helpers.map((helper) => this.pingThrough(helper.descriptor, member.descriptor)));
      this.observe(id, answers.some(Boolean) ? 'ack' : 'no-ack');
    } finally {
      this.probing.delete(id);
    }
  }

  /**
   * One direct ping to a member held suspect or down, beside its probe: an answer brings it
   * back up; silence changes nothing (only probes make a peer suspect). A probe sent into a
   * partition waits out its direct and indirect timeouts (up to three probe timeouts) and
   * holds back every other probe of that member meanwhile, so without rechecks a healed link
   * was noticed up to two seconds late (lan profile), and the anti-entropy round that repairs
   * the partition started only then. A recheck sent just before the heal is lost with the
   * partition, so up to `MAX_RECHECKS_IN_FLIGHT` are in flight per member: a fresh one goes
   * out every recheck interval even while the last waits out its timeout.
   */
  private async recheck(member: Member): Promise<void> {
    const id = member.descriptor.id;
    const inFlight = this.rechecking.get(id) ?? 0;
    if (member.state === 'up' || inFlight >= MAX_RECHECKS_IN_FLIGHT) return;
    this.rechecking.set(id, inFlight + 1);
    try {
      if (await this.ping(member.descriptor)) this.observe(id, 'ack');
    } finally {
      const left = (this.rechecking.get(id) ?? 1) - 1;
      if (left > 0) this.rechecking.set(id, left);
      else this.rechecking.delete(id);
    }
  }

  /** Checks a member now: a probe, or, while one is already in flight, a recheck beside it. */
  private checkNow(member: Member): void {
    if (this.probing.has(member.descriptor.id)) void this.recheck(member);
    else void this.probe(member);
  }

  private async ping(target: PeerDescriptor): Promise<boolean> {
    const hash = this.currentMembersHash();
    const theirs = this.knownHashes.get(target.id);
    const request: PingRequest = {
      from: this.init.self,
      incarnation: this.init.incarnation,
      membersHash: hash,
      ...(theirs === hash ? {} : { members: this.descriptors() }),
    };
    try {
      const response = await callPeer(this.components.transport, target, 'ping', request, { timeoutMs: this.init.probeTimeoutMs });
      if (response.id !== target.id) return false;
      if (response.members) this.learn(response.members);
      this.noteIncarnation(target.id, response.incarnation);
      this.knownHashes.set(target.id, response.membersHash);
      return true;
    } catch {
      return false;
    }
  }

  private async pingThrough(helper: PeerDescriptor, target: PeerDescriptor): Promise<boolean> {
    const request: PingReqRequest = { from: this.init.self.id, target };
    try {
      const response = await callPeer(this.components.transport, helper, 'ping-req', request, { timeoutMs: this.init.probeTimeoutMs * 2 });
      return response.ok;
    } catch {
      return false;
    }
  }

  private observe(peerId: string, outcome: ProbeOutcome): void {
    const member = this.members.get(peerId);
    if (!member) return;
    const nowMs = this.components.clock.nowMs();
    if (outcome === 'ack') member.lastContactMs = nowMs;
    const next = nextState(member.state, outcome);
    if (next === member.state) return;
    const previous = member.state;
    const previousSinceMs = member.sinceMs;
    member.state = next;
    member.sinceMs = nowMs;
    if (next === 'down') {
      // A peer that never answered, shortly after this one started, is most likely still starting.
      const level = unreachablePeerLevel(nowMs, this.startedAtMs, member.lastContactMs !== null);
      this.log[level]({ peer: peerId, lastContactMs: member.lastContactMs }, 'peer down');
      for (const listener of this.listeners) listener.down?.(peerId);
    } else if (next === 'up' && previous === 'down') {
      this.log.info({ peer: peerId, downForMs: nowMs - previousSinceMs }, 'peer back');
      for (const listener of this.listeners) listener.up?.(peerId);
      this.probeTheOthersNotUp();
    } else if (next === 'up' && previous === 'suspect') {
      this.log.debug({ peer: peerId, suspectForMs: nowMs - previousSinceMs }, 'peer no longer suspect');
      for (const listener of this.listeners) listener.recovered?.(peerId);
      this.probeTheOthersNotUp();
    } else {
      this.log.debug({ peer: peerId, from: previous, to: next }, 'peer state');
    }
  }

  /**
   * One peer answering again often means a partition healed: check every other suspect or
   * down peer now rather than at its turn in the probe round (with N peers, up to N - 1
   * probe intervals away).
   */
  private probeTheOthersNotUp(): void {
    for (const other of this.members.values()) if (other.state !== 'up') this.checkNow(other);
  }

  private nextTarget(): Member | undefined {
    while (this.round.length > 0) {
      const member = this.members.get(this.round.pop()!);
      if (member) return member;
    }
    const ids = [...this.members.keys()];
    if (ids.length === 0) return undefined;
    this.round = shuffled(this.components.rng, ids);
    return this.members.get(this.round.pop()!);
  }

  /**
   * A peer told its incarnation: when it differs from the one it told before, the peer started
   * again (possibly too fast for a probe to miss it) and lost what it knew: listeners react
   * (its instances' clients that now heartbeat here are taken over at once).
   */
  private noteIncarnation(peerId: string, incarnation: string | undefined): void {
    const member = this.members.get(peerId);
    if (!member || incarnation === undefined || incarnation === '') return;
    const previous = member.incarnation;
    member.incarnation = incarnation;
    if (previous === null || previous === incarnation) return;
    this.log.info({ peer: peerId }, 'peer restarted');
    for (const listener of this.listeners) listener.restarted?.(peerId);
  }

  private currentMembersHash(): string {
    this.cachedHash ??= membersHash(this.descriptors());
    return this.cachedHash;
  }

  private add(descriptor: PeerDescriptor, fromConfig: boolean): void {
    if (descriptor.id === this.init.self.id || this.members.has(descriptor.id)) return;
    this.cachedHash = undefined;
    this.members.set(descriptor.id, {
      descriptor,
      state: 'up',
      sinceMs: this.components.clock.nowMs(),
      lastContactMs: null,
      incarnation: null,
      fromConfig,
    });
    if (!fromConfig) this.log.info({ peer: descriptor.id, url: descriptor.url }, 'peer joined');
    for (const listener of this.listeners) listener.joined?.(descriptor);
  }

  /** A peer describing itself (in its ping) is the authority on its URL, region and zone. */
  private updateSelfDescribed(descriptor: PeerDescriptor): void {
    const member = this.members.get(descriptor.id);
    if (!member) return this.add(descriptor, false);
    if (!member.fromConfig) {
      member.descriptor = descriptor;
      this.cachedHash = undefined;
    }
  }
}
