import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HOLD_AFTER_DROP_MS,
  HOLD_AFTER_STALL_MS,
  holdThenHandOn,
  STALL_MS,
  StallWatch,
  WATCH_INTERVAL_MS,
} from '../../../src/http/abandoned-calls.js';
import { FrontDoor } from '../../../src/http/front-door.js';

/**
 * The stall watch and the hold of peer calls after a stall (src/http/abandoned-calls.ts): a
 * peer that stood still skips the peer calls whose caller gave up meanwhile, and holds nothing
 * otherwise. The time is a variable the test moves; turns of the loop are awaited, never slept.
 */

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const watches: StallWatch[] = [];
afterEach(() => {
  for (const watch of watches.splice(0)) watch.stop();
});

/** Time passing with the loop running: the watch's timer looks every `WATCH_INTERVAL_MS`. */
function pass(watch: StallWatch, time: { ms: number }, ms: number): void {
  const untilMs = time.ms + ms;
  while (time.ms < untilMs) {
    time.ms = Math.min(untilMs, time.ms + WATCH_INTERVAL_MS);
    watch.look();
  }
}

function watchAt(time: { ms: number }, onStall?: (stalledMs: number) => void): StallWatch {
  const watch = new StallWatch(() => time.ms, onStall);
  watches.push(watch);
  return watch;
}

/** A started watch and the time it reads. */
function startedWatch(onStall?: (stalledMs: number) => void): { time: { ms: number }; watch: StallWatch } {
  const time = { ms: 0 };
  const watch = watchAt(time, onStall);
  watch.start();
  return { time, watch };
}

/** A peer call held by a watch, and the calls handed on. */
function heldCall(): { call: ReturnType<typeof fakeCall>; watch: StallWatch; handed: string[] } {
  const watch = watchAt({ ms: 0 });
  const handed: string[] = [];
  const call = fakeCall('/v1/peer/ping');
  holdThenHandOn(call.raw, call.res, watch, (raw) => handed.push(raw.url!));
  return { call, watch, handed };
}

/** A request whose socket the test closes from the caller's side (`leave`) or not. */
function fakeCall(url: string): { raw: IncomingMessage; res: ServerResponse; leave(): void; destroyed(): boolean } {
  const socket = Object.assign(new EventEmitter(), {
    destroyed: false,
    readableEnded: false,
    destroy() {
      socket.destroyed = true;
    },
  });
  const raw = { url, destroyed: false, socket } as unknown as IncomingMessage;
  return {
    raw,
    res: {} as ServerResponse,
    leave: () => (socket.readableEnded = true),
    destroyed: () => socket.destroyed,
  };
}

describe('the stall watch', () => {
  it('holds nothing before it is started, however late it is asked', () => {
    const time = { ms: 0 };
    const watch = watchAt(time);
    time.ms += 60_000;
    expect(watch.holding()).toBe(false);
    expect(watch.stalls).toBe(0);
  });

  it('holds for a while after a look comes a stall late, and not after a look on time', () => {
    const stalls: number[] = [];
    const { time, watch } = startedWatch((ms) => stalls.push(ms));
    time.ms += STALL_MS - 1;
    watch.look();
    expect(watch.holding()).toBe(false);
    pass(watch, time, 10_000);
    expect(watch.holding()).toBe(false);
    time.ms += 20_000;
    watch.look();
    expect(stalls).toEqual([20_000]);
    expect(watch.holding()).toBe(true);
    pass(watch, time, HOLD_AFTER_STALL_MS - 1);
    expect(watch.holding()).toBe(true);
    pass(watch, time, 1);
    expect(watch.holding()).toBe(false);
    expect(watch.stalls).toBe(1);
  });

  it('tells a stall when asked before its own late look came (the queued calls are read first)', () => {
    const { time, watch } = startedWatch();
    time.ms += 5_000;
    expect(watch.holding()).toBe(true);
    expect(watch.stalls).toBe(1);
    // The timer's own look, a moment later, is not a second stall.
    time.ms += 1;
    watch.look();
    expect(watch.stalls).toBe(1);
  });

  it('holds on while calls are still found abandoned, and stops a while after the last', () => {
    const { time, watch } = startedWatch();
    time.ms += 3_000;
    watch.look();
    pass(watch, time, HOLD_AFTER_STALL_MS - 10);
    watch.noteDropped();
    pass(watch, time, HOLD_AFTER_DROP_MS - 1);
    expect(watch.holding()).toBe(true);
    pass(watch, time, 1);
    expect(watch.holding()).toBe(false);
    expect(watch.droppedTotal).toBe(1);
  });
});

describe('a held call', () => {
  it('is dropped unanswered when its caller closed the connection by the second turn', async () => {
    const { call, watch, handed } = heldCall();
    // The close arrives in the turn after the request (libuv reads it then).
    await turn();
    call.leave();
    await turn();
    await turn();
    expect(handed).toEqual([]);
    expect(call.destroyed()).toBe(true);
    expect(watch.droppedTotal).toBe(1);
  });

  it('is handed on after two turns when its caller still waits', async () => {
    const { call, watch, handed } = heldCall();
    await turn();
    expect(handed).toEqual([]);
    await turn();
    await turn();
    expect(handed).toEqual(['/v1/peer/ping']);
    expect(call.destroyed()).toBe(false);
    expect(watch.droppedTotal).toBe(0);
  });
});

describe('the front door after a stall', () => {
  function doorWith(watch: StallWatch): { listener: (raw: IncomingMessage, res: ServerResponse) => void; handled: string[] } {
    const door = new FrontDoor();
    door.skipAbandonedPeerCalls(watch);
    const handled: string[] = [];
    return { listener: door.listener((raw) => handled.push(raw.url!)), handled };
  }

  it('holds peer calls only, and only after a stall; a client request is never held', async () => {
    const { time, watch } = startedWatch();
    const { listener, handled } = doorWith(watch);

    const before = fakeCall('/v1/peer/ping');
    before.leave();
    listener(before.raw, before.res);
    expect(handled).toEqual(['/v1/peer/ping']);

    time.ms += 20_000;
    const abandoned = fakeCall('/v1/peer/ping');
    const waited = fakeCall('/v1/peer/replicate');
    const client = fakeCall('/v1/services/orders');
    client.leave();
    for (const call of [abandoned, waited, client]) listener(call.raw, call.res);
    expect(handled).toEqual(['/v1/peer/ping', '/v1/services/orders']);
    abandoned.leave();
    await turn();
    await turn();
    await turn();
    expect(handled).toEqual(['/v1/peer/ping', '/v1/services/orders', '/v1/peer/replicate']);
    expect(abandoned.destroyed()).toBe(true);
    expect(watch.droppedTotal).toBe(1);
  });
});
