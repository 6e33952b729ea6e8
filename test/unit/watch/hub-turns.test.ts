import { describe, expect, it } from 'vitest';
import type { Clock, TimerHandle } from '../../../src/clock/clock.js';
import { seededRng } from '../../../src/clock/rng.js';
import { silentLogger } from '../../../src/log/logger.js';
import { QUIET_GATHER_MS } from '../../../src/watch/channel.js';
import { WatchHub, type WatchEvent } from '../../../src/watch/hub.js';
import { snapshotUnits } from '../../../src/watch/snapshots.js';
import { TURN_UNITS } from '../../../src/watch/turns.js';
import { instance } from '../../support/cluster.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';

/**
 * The fake clock's time and its timers with a delay (the change windows), but the zero-delay
 * timers (a turn of the event loop: the hub's queued snapshots, the fan-out's slices) run when
 * the test says, one turn at a time.
 */
class TurnClock implements Clock {
  private queue: { fn: () => void; cancelled: boolean }[] = [];

  constructor(private readonly fake: FakeClock) {}

  nowMs(): number {
    return this.fake.nowMs();
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    if (delayMs > 0) return this.fake.setTimeout(fn, delayMs);
    const timer = { fn, cancelled: false };
    this.queue.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }
  setInterval(fn: () => void, periodMs: number): TimerHandle {
    return this.fake.setInterval(fn, periodMs);
  }
  /** Zero-delay timers waiting (not cancelled). */
  get pending(): number {
    return this.queue.filter((timer) => !timer.cancelled).length;
  }
  /** One turn: the zero-delay timers set before it (those they set wait for the next). */
  turn(): void {
    const due = this.queue;
    this.queue = [];
    for (const timer of due) if (!timer.cancelled) timer.fn();
  }
}

/** `services` services of `perService` instances each, named so that their order is their number. */
async function setUp(services: number, perService = 2) {
  const { node, clock } = await createTestNode();
  const name = (i: number) => `svc-${String(i).padStart(4, '0')}`;
  for (let s = 0; s < services; s++) for (let i = 0; i < perService; i++) node.registry.register(instance(`${name(s)}-${i}`, { service: name(s) }));
  const turns = new TurnClock(clock);
  const hub = new WatchHub({ clock: turns, rng: seededRng(1), registry: node.registry, logger: silentLogger, views: node.views }, { coalesceMs: 50, maxWatchers: 100 });
  return { node, clock, turns, hub, name };
}

function collector() {
  const events: WatchEvent[] = [];
  return { events, sink: (event: WatchEvent) => (events.push(event), true) };
}

const ids = (list: { instanceId: string }[]) => list.map((item) => item.instanceId).sort();
const snapshots = (events: WatchEvent[]) => events.filter((event) => event.type === 'snapshot');
const of = (events: WatchEvent[], service: string) => events.filter((event) => 'service' in event && event.service === service);
/** The units the snapshots among `events` cost. */
const units = (events: WatchEvent[]) => events.reduce((sum, event) => sum + (event.type === 'snapshot' ? snapshotUnits(event.instances.length) : 0), 0);

describe('WatchHub: a wildcard watch\'s snapshots in turns', () => {
  it('sends a large namespace\'s snapshots a bounded amount per turn, each service\'s once, in order', async () => {
    const { turns, hub, name } = await setUp(300);
    const { events, sink } = collector();
    hub.subscribe({ namespace: 'default', services: null }, sink);
    // The first turn's share at once, in the subscriber's turn; not the whole namespace.
    const perTurn = [events.length];
    expect(events.length).toBeGreaterThan(0);
    expect(units(events)).toBeLessThanOrEqual(TURN_UNITS);
    while (turns.pending > 0) {
      const before = events.length;
      turns.turn();
      perTurn.push(events.length - before);
      expect(units(events.slice(before))).toBeLessThanOrEqual(TURN_UNITS);
    }
    expect(perTurn.length).toBeGreaterThanOrEqual(Math.ceil((300 * snapshotUnits(2)) / TURN_UNITS));
    expect(events.every((event) => event.type === 'snapshot')).toBe(true);
    expect(snapshots(events).map((event) => (event.type === 'snapshot' ? event.service : ''))).toEqual(Array.from({ length: 300 }, (_, i) => name(i)));
    expect(hub.stats()).toMatchObject({ subscribers: 1, eventsSent: 300 });
  });

  it('tells a change between turns to a service already sent as a delta after its snapshot', async () => {
    const { node, clock, turns, hub, name } = await setUp(300);
    const { events, sink } = collector();
    hub.subscribe({ namespace: 'default', services: null }, sink);
    expect(of(events, name(0))).toHaveLength(1);
    node.registry.register(instance('new-in-0', { service: name(0) }));
    await clock.advance(QUIET_GATHER_MS);
    // The delta came before the snapshots still to come.
    expect(snapshots(events).length).toBeLessThan(300);
    expect(of(events, name(0)).map((event) => event.type)).toEqual(['snapshot', 'delta']);
    const delta = of(events, name(0))[1]!;
    expect(delta.type === 'delta' && ids(delta.added)).toEqual(['new-in-0']);
    while (turns.pending > 0) turns.turn();
    expect(of(events, name(0))).toHaveLength(2);
    expect(snapshots(events)).toHaveLength(300);
  });

  it('shows a change to a service not reached yet in its later snapshot, with no delta before it', async () => {
    const { node, clock, turns, hub, name } = await setUp(300);
    const { events, sink } = collector();
    hub.subscribe({ namespace: 'default', services: null }, sink);
    const late = name(299);
    node.registry.register(instance('added-late', { service: late }));
    node.registry.cancel(instance(`${late}-0`, { service: late }));
    // A service whose every instance goes, and a service dropped for good (its tombstones purged).
    const emptied = name(298);
    for (const i of [0, 1]) node.registry.cancel(instance(`${emptied}-${i}`, { service: emptied }));
    const dropped = name(297);
    for (const i of [0, 1]) {
      node.registry.cancel(instance(`${dropped}-${i}`, { service: dropped }));
      node.store.purge({ namespace: 'default', service: dropped, instanceId: `${dropped}-${i}` });
    }
    expect(node.store.getService('default', dropped)).toBeUndefined();
    await clock.advance(100);
    expect(of(events, late)).toEqual([]);
    expect(of(events, emptied)).toEqual([]);
    while (turns.pending > 0) turns.turn();
    const [snapshot, ...after] = of(events, late);
    expect(after).toEqual([]);
    expect(snapshot?.type === 'snapshot' && ids(snapshot.instances)).toEqual(['added-late', `${late}-1`]);
    expect(of(events, emptied).map((event) => event.type === 'snapshot' && event.instances.length)).toEqual([0]);
    expect(of(events, dropped).map((event) => event.type === 'snapshot' && event.instances.length)).toEqual([0]);
    // The channel the snapshot joined agrees with it: removing an instance it showed is a removal.
    node.registry.cancel(instance(`${late}-1`, { service: late }));
    await clock.advance(100);
    while (turns.pending > 0) turns.turn();
    const removal = of(events, late)[1];
    expect(removal?.type === 'delta' && [ids(removal.added), ids(removal.removed)]).toEqual([[], [`${late}-1`]]);
  });

  it('picks up a service made between turns once, as a delta, whether it sorts before or after the services still to come', async () => {
    const { node, clock, turns, hub, name } = await setUp(300);
    const { events, sink } = collector();
    hub.subscribe({ namespace: 'default', services: null }, sink);
    expect(of(events, name(150))).toEqual([]);
    const news = [`${name(150)}-new`, 'zzz-new', 'aaa-new'];
    for (const service of news) node.registry.register(instance(`${service}-0`, { service }));
    // A listed service still to come, dropped for good and made again in another case: new too.
    const renamed = name(200).toUpperCase();
    for (const i of [0, 1]) {
      node.registry.cancel(instance(`${name(200)}-${i}`, { service: name(200) }));
      node.store.purge({ namespace: 'default', service: name(200), instanceId: `${name(200)}-${i}` });
    }
    node.registry.register(instance('renamed-0', { service: renamed }));
    await clock.advance(QUIET_GATHER_MS);
    for (const service of [...news, renamed]) expect(of(events, service).map((event) => event.type)).toEqual(['delta']);
    while (turns.pending > 0) turns.turn();
    await clock.advance(100);
    for (const service of [...news, renamed]) {
      const told = of(events, service);
      expect(told.map((event) => event.type)).toEqual(['delta']);
      expect(told[0]!.type === 'delta' && ids(told[0]!.added)).toEqual([service === renamed ? 'renamed-0' : `${service}-0`]);
    }
    expect(snapshots(events)).toHaveLength(299);
  });

  it('stops sending snapshots when closed part-way: no timer left, no further sink call', async () => {
    const { node, clock, turns, hub } = await setUp(300);
    let calls = 0;
    let closed = 0;
    const subscription = hub.subscribe(
      { namespace: 'default', services: null },
      () => (calls += 1) > 0,
      () => (closed += 1),
    );
    turns.turn();
    const sent = calls;
    expect(sent).toBeLessThan(300);
    subscription.close();
    expect(closed).toBe(1);
    expect(turns.pending).toBe(0);
    expect(hub.stats().subscribers).toBe(0);
    node.registry.register(instance('after-close', { service: 'svc-0000' }));
    await clock.advance(1_000);
    expect(calls).toBe(sent);
    subscription.close();
    expect(closed).toBe(1);
  });

  it('on shutdown ends the watches part-way and leaves no turn behind', async () => {
    const { turns, hub } = await setUp(300);
    let calls = 0;
    let closed = 0;
    hub.subscribe({ namespace: 'default', services: null }, () => (calls += 1) > 0, () => (closed += 1));
    const sent = calls;
    hub.closeAll();
    expect([closed, turns.pending, hub.openChannels, hub.stats().subscribers]).toEqual([1, 0, 0, 0]);
    turns.turn();
    expect(calls).toBe(sent);
  });

  it('drops a subscriber that cannot take a snapshot, and sends it no more', async () => {
    const { turns, hub } = await setUp(300);
    const events: WatchEvent[] = [];
    let closed = false;
    hub.subscribe(
      { namespace: 'default', services: null },
      (event) => (events.push(event), snapshots(events).length < 100),
      () => (closed = true),
    );
    while (turns.pending > 0) turns.turn();
    expect(events.map((event) => event.type).slice(-2)).toEqual(['snapshot', 'dropped']);
    expect(snapshots(events)).toHaveLength(100);
    expect(closed).toBe(true);
    expect(hub.stats()).toMatchObject({ subscribers: 0, dropped: 1 });
    expect(hub.openChannels).toBe(0);
  });

  it('keeps to its reader\'s pace: while the reader is not ready its snapshots wait, on no timer, until resumed', async () => {
    const { node, clock, turns, hub, name } = await setUp(300);
    const events: WatchEvent[] = [];
    // A reader that takes 40 frames, then needs a drain.
    let buffered = 0;
    let closed = false;
    const subscription = hub.subscribe(
      { namespace: 'default', services: null },
      (event) => (events.push(event), (buffered += 1), true),
      () => (closed = true),
      { ready: () => buffered < 40 },
    );
    expect(events).toHaveLength(40);
    expect(turns.pending).toBe(0);
    // A change meanwhile to a service still to come is in its snapshot, when the reader gets to it.
    node.registry.register(instance('while-paused', { service: name(299) }));
    await clock.advance(100);
    expect(events).toHaveLength(40);
    const drains: number[] = [];
    while (snapshots(events).length < 300) {
      buffered = 0;
      subscription.resume();
      // Resumed in a coming turn, not in the drain's.
      expect(buffered).toBe(0);
      while (turns.pending > 0) turns.turn();
      drains.push(buffered);
    }
    expect(drains.every((frames) => frames <= 40)).toBe(true);
    expect(new Set(snapshots(events).map((event) => (event.type === 'snapshot' ? event.service : ''))).size).toBe(300);
    const last = of(events, name(299));
    expect(last.map((event) => event.type)).toEqual(['snapshot']);
    expect(last[0]!.type === 'snapshot' && ids(last[0]!.instances)).toContain('while-paused');
    expect([closed, hub.stats().dropped]).toEqual([false, 0]);
  });

  it('shares each turn among the large watches waiting, round robin', async () => {
    const { turns, hub } = await setUp(300);
    const a = collector();
    const b = collector();
    hub.subscribe({ namespace: 'default', services: null }, a.sink);
    hub.subscribe({ namespace: 'default', services: null }, b.sink);
    const before = [a.events.length, b.events.length];
    turns.turn();
    expect(a.events.length).toBeGreaterThan(before[0]!);
    expect(b.events.length).toBeGreaterThan(before[1]!);
    expect(units(a.events.slice(before[0])) + units(b.events.slice(before[1]))).toBeLessThanOrEqual(TURN_UNITS);
    while (turns.pending > 0) turns.turn();
    expect([snapshots(a.events).length, snapshots(b.events).length]).toEqual([300, 300]);
  });
});

describe('WatchHub: closing a subscription', () => {
  it('leaves only the channels the subscriber holds: part-way, the services it was sent', async () => {
    const { turns, hub } = await setUp(300);
    const { events, sink } = collector();
    const subscription = hub.subscribe({ namespace: 'default', services: null }, sink);
    turns.turn();
    // One channel per service sent so far, none for the services still to come.
    expect(hub.openChannels).toBe(events.length);
    expect(events.length).toBeLessThan(300);
    subscription.close();
    expect(hub.openChannels).toBe(0);
    expect(turns.pending).toBe(0);
  });

  it('leaves thousands of channels a turn\'s worth at a time, and hears nothing meanwhile', async () => {
    const services = 3 * TURN_UNITS;
    const { node, clock, turns, hub, name } = await setUp(services, 1);
    const { events, sink } = collector();
    const subscription = hub.subscribe({ namespace: 'default', services: null }, sink);
    // Another watch of one of the services, which keeps its channel.
    const other = collector();
    hub.subscribe({ namespace: 'default', services: [name(0)] }, other.sink);
    while (turns.pending > 0) turns.turn();
    expect(snapshots(events)).toHaveLength(services);
    expect(hub.openChannels).toBe(services);
    subscription.close();
    const held = [hub.openChannels];
    while (turns.pending > 0) {
      turns.turn();
      held.push(hub.openChannels);
    }
    // At most a turn's units of channels left in the closing call and in each turn after it.
    for (let i = 1; i < held.length; i++) expect(held[i - 1]! - held[i]!).toBeLessThanOrEqual(TURN_UNITS);
    expect(held[0]).toBeGreaterThanOrEqual(services - TURN_UNITS);
    expect(held.at(-1)).toBe(1);
    // A change meanwhile reached the other watch only.
    node.registry.register(instance('later', { service: name(0) }));
    await clock.advance(QUIET_GATHER_MS);
    while (turns.pending > 0) turns.turn();
    expect(other.events.map((event) => event.type)).toEqual(['snapshot', 'delta']);
    expect(events).toHaveLength(services);
  });

  it('while a closed subscriber still leaves its channels, a change is not written to it', async () => {
    const services = 2 * TURN_UNITS;
    const { node, clock, turns, hub, name } = await setUp(services, 1);
    const { events, sink } = collector();
    const subscription = hub.subscribe({ namespace: 'default', services: null }, sink);
    while (turns.pending > 0) turns.turn();
    const sent = events.length;
    subscription.close();
    node.registry.register(instance('while-leaving', { service: name(services - 1) }));
    await clock.advance(QUIET_GATHER_MS);
    while (turns.pending > 0) turns.turn();
    expect(events).toHaveLength(sent);
    expect(hub.openChannels).toBe(0);
  });
});
