import { describe, expect, it } from 'vitest';
import { RegistryError } from '../../../src/errors.js';
import { QUIET_GATHER_MS } from '../../../src/watch/channel.js';
import { FAN_OUT_SLICE } from '../../../src/watch/fan-out.js';
import type { WatchEvent, WatchFrame } from '../../../src/watch/hub.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';
import { record } from '../../support/records.js';

function collector() {
  const events: WatchEvent[] = [];
  return { events, sink: (event: WatchEvent) => (events.push(event), true) };
}

const ids = (list: { instanceId: string }[]) => list.map((item) => item.instanceId);

describe('WatchHub', () => {
  it('sends a snapshot of each watched service first', async () => {
    const { node } = await createTestNode();
    node.registry.register(instance('a'));
    node.registry.register(instance('b', { service: 'billing' }));
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders', 'billing', 'nothing'] }, sink);
    expect(events.map((e) => [e.type, 'service' in e ? e.service : '', 'instances' in e ? ids(e.instances) : []])).toEqual([
      ['snapshot', 'orders', ['a']],
      ['snapshot', 'billing', ['b']],
      ['snapshot', 'nothing', []],
    ]);
  });

  it('tells the native adapter\'s metrics of each delta written: subscribers reached, delay from the window\'s first change', async () => {
    const { node, clock } = await createTestNode();
    const pushes = node.adapterMetrics.adapter('native').pushes;
    const streams = [collector(), collector(), collector()];
    for (const { sink } of streams) node.watch.subscribe({ namespace: 'default', services: ['orders'] }, sink);
    expect(pushes.sent).toBe(0);
    node.registry.register(instance('a'));
    await clock.advance(1_000);
    expect(streams.map(({ events }) => events.map((e) => e.type))).toEqual([['snapshot', 'delta'], ['snapshot', 'delta'], ['snapshot', 'delta']]);
    expect(pushes.sent).toBe(3);
    // A quiet service's change is gathered for QUIET_GATHER_MS, then written: each of the three waited that long.
    expect(pushes.delaySum).toBeCloseTo((3 * QUIET_GATHER_MS) / 1_000, 9);
    // A burst within the window is one delta each, counted once per subscriber.
    node.registry.register(instance('b'));
    node.registry.register(instance('c'));
    await clock.advance(1_000);
    expect(pushes.sent).toBe(6);
    expect(pushes.delaySum).toBeCloseTo((6 * QUIET_GATHER_MS) / 1_000, 9);
  });

  it('coalesces a burst of changes into one delta per service', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(instance('gone'));
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, sink);
    for (let i = 0; i < 20; i++) node.registry.register(instance(`i-${i}`));
    node.registry.update(instance('i-3'), { status: 'DOWN' });
    node.registry.cancel(instance('gone'));
    node.registry.register(instance('brief'));
    node.registry.cancel(instance('brief'));
    await clock.advance(49);
    expect(events).toHaveLength(1);
    await clock.advance(1);
    expect(events).toHaveLength(2);
    const delta = events[1]!;
    expect(delta.type).toBe('delta');
    if (delta.type !== 'delta') return;
    expect(ids(delta.added)).toHaveLength(20);
    expect(delta.added.find((view) => view.instanceId === 'i-3')?.status).toBe('DOWN');
    expect(delta.removed).toEqual([{ instanceId: 'gone' }]);
    expect(delta.changed).toEqual([]);
    expect(delta.revision).toBe(node.store.getService('default', 'orders')!.revision);
  });

  it('tells a wildcard watch of an empty namespace its first service, with no channel or long poll open before', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(instance('elsewhere', { namespace: 'team-b' }));
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'team-a', services: null }, sink);
    expect(events).toEqual([]);
    expect(node.watch.openChannels).toBe(0);
    node.registry.register(instance('first', { namespace: 'team-a', service: 'billing' }));
    await clock.advance(1_000);
    expect(events.map((e) => [e.type, 'service' in e ? e.service : '', e.type === 'delta' ? ids(e.added) : []])).toEqual([['delta', 'billing', ['first']]]);
  });

  it('tells changed, then removed, in order, once each', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(instance('a'));
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, sink);
    node.registry.update(instance('a'), { status: 'OUT_OF_SERVICE' });
    await clock.advance(100);
    node.registry.heartbeat(instance('a'));
    await clock.advance(100);
    node.registry.cancel(instance('a'));
    await clock.advance(100);
    expect(events.map((e) => (e.type === 'delta' ? [ids(e.added), ids(e.changed), ids(e.removed)] : e.type))).toEqual([
      'snapshot',
      [[], ['a'], []],
      [[], [], ['a']],
    ]);
  });

  it('notifies changes that arrive by replication exactly like local ones', async () => {
    const { node, clock } = await createTestNode();
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: null }, sink);
    node.registry.applyRemote(record({ wallMs: clock.nowMs(), peerId: 'peer-9', instanceId: 'remote', service: 'fresh' }), 30_000);
    await clock.advance(50);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'delta', service: 'fresh', added: [expect.objectContaining({ instanceId: 'remote', owner: 'peer-9' })] });
  });

  it('drops a subscriber that cannot keep up, with a dropped event', async () => {
    const { node, clock } = await createTestNode();
    const events: WatchEvent[] = [];
    let closed = false;
    node.watch.subscribe(
      { namespace: 'default', services: ['orders'] },
      (event) => {
        events.push(event);
        return event.type === 'snapshot';
      },
      () => {
        closed = true;
      },
    );
    node.registry.register(instance('a'));
    await clock.advance(50);
    expect(events.map((e) => e.type)).toEqual(['snapshot', 'delta', 'dropped']);
    expect(closed).toBe(true);
    expect(node.watch.stats()).toMatchObject({ subscribers: 0, dropped: 1 });
  });

  it('refuses watchers beyond the limit with 429', async () => {
    const { node } = await createTestNode({ file: { cluster: { watchMaxWatchers: 2 } } });
    node.watch.subscribe({ namespace: 'default', services: null }, () => true);
    const second = node.watch.subscribe({ namespace: 'default', services: null }, () => true);
    expect(() => node.watch.subscribe({ namespace: 'default', services: null }, () => true)).toThrowError(RegistryError);
    try {
      node.watch.admit();
    } catch (error) {
      expect((error as RegistryError).status).toBe(429);
      expect((error as RegistryError).retryAfterSeconds).toBe(5);
    }
    second.close();
    expect(() => node.watch.admit()).not.toThrow();
  });

  describe('long poll', () => {
    it('answers at once when the revision already passed the index', async () => {
      const { node } = await createTestNode();
      node.registry.register(instance('a'));
      await expect(node.watch.waitForChange('default', 'orders', 0, 30_000)).resolves.toBe(true);
    });

    it('answers as soon as the service changes', async () => {
      const { node, clock } = await createTestNode();
      node.registry.register(instance('a'));
      const revision = node.store.getService('default', 'orders')!.revision;
      let answer: boolean | undefined;
      void node.watch.waitForChange('default', 'orders', revision, 30_000).then((changed) => (answer = changed));
      node.registry.register(instance('b', { service: 'other' }));
      await clock.advance(1_000);
      expect(answer).toBeUndefined();
      node.registry.register(instance('c'));
      await clock.advance(0);
      expect(answer).toBe(true);
      expect(node.watch.stats().longPolls).toBe(0);
    });

    it('times out after the wait plus at most 1/16 of it', async () => {
      const { node, clock } = await createTestNode();
      let answer: boolean | undefined;
      void node.watch.waitForChange('default', 'orders', 0, 16_000).then((changed) => (answer = changed));
      await clock.advance(15_999);
      expect(answer).toBeUndefined();
      await clock.advance(1_001);
      expect(answer).toBe(false);
    });

    it('ends when the caller goes away, and on shutdown', async () => {
      const { node, clock } = await createTestNode();
      const abort = new AbortController();
      let first: boolean | undefined;
      let second: boolean | undefined;
      void node.watch.waitForChange('default', 'orders', 0, 60_000, abort.signal).then((changed) => (first = changed));
      void node.watch.waitForChange('default', 'orders', 0, 60_000).then((changed) => (second = changed));
      abort.abort();
      await clock.advance(0);
      expect(first).toBe(false);
      expect(node.watch.stats().longPolls).toBe(1);
      node.watch.closeAll();
      await clock.advance(0);
      expect(second).toBe(false);
    });
  });
});

describe('WatchHub sharing and coalescing', () => {
  it('writes one frame, encoded once, to every subscriber of a service and group', async () => {
    const { node, clock } = await createTestNode();
    const frames: WatchFrame[][] = [[], [], []];
    const subscribe = (i: number, group: string | null = null) =>
      node.watch.subscribeFrames({ namespace: 'default', services: ['orders'], group }, (frame) => (frames[i]!.push(frame), true));
    subscribe(0);
    subscribe(1);
    subscribe(2, 'blue');
    expect(frames[0]![0]!.bytes()).toBe(frames[1]![0]!.bytes());
    node.registry.register(instance('a'));
    await clock.advance(QUIET_GATHER_MS);
    expect(frames[0]).toHaveLength(2);
    expect(frames[0]![1]).toBe(frames[1]![1]);
    expect(frames[0]![1]!.bytes()).toBe(frames[1]![1]!.bytes());
    expect(frames[0]![1]!.bytes().toString()).toMatch(/^event: delta\nid: \d+\ndata: \{"namespace":"default","service":"orders",/);
    // The group's channel saw nothing of its group.
    expect(frames[2]).toHaveLength(1);
  });

  it('pushes a change to a quiet service at once, and gathers the ones that keep coming for at most watchCoalesceMs', async () => {
    const { node, clock } = await createTestNode();
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, sink);
    node.registry.register(instance('first'));
    await clock.advance(QUIET_GATHER_MS - 1);
    expect(events).toHaveLength(1);
    await clock.advance(1);
    expect(events).toHaveLength(2);
    await clock.advance(10 - QUIET_GATHER_MS);
    node.registry.register(instance('second'));
    await clock.advance(39);
    expect(events).toHaveLength(2);
    node.registry.register(instance('third'));
    await clock.advance(1);
    expect(events).toHaveLength(3);
    const delta = events[2]!;
    expect(delta.type === 'delta' && ids(delta.added)).toEqual(['second', 'third']);
    await clock.advance(1_000);
    node.registry.register(instance('later'));
    await clock.advance(QUIET_GATHER_MS);
    expect(events).toHaveLength(4);
  });

  it('gathers the changes that follow a push that took time, rather than pushing each alone', async () => {
    const { node, clock } = await createTestNode();
    const { events, sink } = collector();
    // A subscriber whose deltas take 200 ms to write (a frame going to thousands of sockets).
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, (event) => {
      if (event.type === 'delta') clock.jump(200);
      return sink(event);
    });
    node.registry.register(instance('first'));
    await clock.advance(QUIET_GATHER_MS);
    expect(events).toHaveLength(2);
    // 205 ms after the first change, 5 ms after the push ended: part of the same burst.
    await clock.advance(5);
    node.registry.register(instance('second'));
    await clock.advance(QUIET_GATHER_MS);
    expect(events).toHaveLength(2);
    node.registry.register(instance('third'));
    // Gathered until watchCoalesceMs (50 ms) after the push ended, at +201 ms.
    await clock.advance(43);
    expect(events).toHaveLength(2);
    await clock.advance(1);
    expect(events).toHaveLength(3);
    const delta = events[2]!;
    expect(delta.type === 'delta' && ids(delta.added)).toEqual(['second', 'third']);
  });

  it('writes a frame to more subscribers than one slice across turns, each hearing every event once and in order', async () => {
    const { node, clock } = await createTestNode();
    const all = Array.from({ length: FAN_OUT_SLICE * 2 + 5 }, () => collector());
    for (const { sink } of all) node.watch.subscribe({ namespace: 'default', services: ['orders'] }, sink);
    node.registry.register(instance('a'));
    node.registry.register(instance('b'));
    await clock.advance(QUIET_GATHER_MS);
    await clock.advance(100);
    node.registry.register(instance('c'));
    await clock.advance(100);
    for (const { events } of all) {
      expect(events.map((event) => event.type)).toEqual(['snapshot', 'delta', 'delta']);
      expect(events.flatMap((event) => (event.type === 'delta' ? ids(event.added) : []))).toEqual(['a', 'b', 'c']);
    }
  });

  it('gathers what changes while a frame is still being written into the next frame, rather than queueing one per window', async () => {
    const { node, clock } = await createTestNode();
    const all = Array.from({ length: FAN_OUT_SLICE * 2 + 88 }, () => collector());
    // Each delta takes 1 ms to write to each subscriber: the frame takes 600 ms, in three slices.
    for (const { sink } of all) {
      node.watch.subscribe({ namespace: 'default', services: ['orders'] }, (event) => {
        if (event.type === 'delta') clock.jump(1);
        return sink(event);
      });
    }
    node.registry.register(instance('a'));
    await clock.advance(QUIET_GATHER_MS);
    // The first slice is out; two more to go. Changes meanwhile wait for the frame to be written.
    node.registry.register(instance('b'));
    await clock.advance(10);
    node.registry.register(instance('c'));
    await clock.advance(1_000);
    for (const { events } of all) {
      expect(events.filter((event) => event.type === 'delta').map((event) => (event.type === 'delta' ? ids(event.added) : []))).toEqual([['a'], ['b', 'c']]);
    }
  });

  it('flushes pending changes before a new subscriber joins, so its snapshot and the next delta agree', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(instance('a'));
    const early = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, early.sink);
    node.registry.register(instance('b'));
    const late = collector();
    node.watch.subscribe({ namespace: 'default', services: ['orders'] }, late.sink);
    expect(early.events.map((e) => e.type)).toEqual(['snapshot', 'delta']);
    expect(late.events[0]!.type === 'snapshot' && ids(late.events[0]!.instances)).toEqual(['a', 'b']);
    await clock.advance(100);
    expect(late.events).toHaveLength(1);
  });

  it('past watchMaxWatchers refuses streams, says to long-poll, and still admits long polls', async () => {
    const { node } = await createTestNode({ file: { cluster: { watchMaxWatchers: 1 } } });
    node.watch.subscribe({ namespace: 'default', services: null }, () => true);
    expect(() => node.watch.admit()).toThrowError(/long-poll GET \/v1\/services\/\{service\}\?index=/);
    void node.watch.waitForChange('default', 'orders', 0, 30_000);
    expect(node.watch.stats()).toMatchObject({ subscribers: 1, longPolls: 1 });
    expect(() => node.watch.admitLongPoll()).toThrowError(RegistryError);
  });
});

describe('WatchHub and service names', () => {
  it('follows the store in matching names: a watch of Orders hears orders, named as stored', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(instance('a'));
    const { events, sink } = collector();
    node.watch.subscribe({ namespace: 'default', services: ['ORDERS'] }, sink);
    node.registry.register(instance('b'));
    await clock.advance(100);
    expect(events.map((e) => [e.type, 'service' in e ? e.service : ''])).toEqual([
      ['snapshot', 'orders'],
      ['delta', 'orders'],
    ]);
  });
});
