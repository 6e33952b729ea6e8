import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { holdThenHandOn } from '../../../src/http/abandoned-calls.js';
import { FrontDoor } from '../../../src/http/front-door.js';
import { steppedWatch } from '../../support/stall-watch.js';

/**
 * The hold of peer calls after a stall (src/http/abandoned-calls.ts): a peer that stood still
 * skips the peer calls whose caller gave up meanwhile, and holds nothing otherwise. The watch's
 * time is the test's; the hold's turns of the loop are awaited, never slept.
 */

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

/** A peer call held, and the calls handed on. */
function heldCall(): { call: ReturnType<typeof fakeCall>; watch: ReturnType<typeof steppedWatch>['watch']; handed: string[] } {
  const { watch } = steppedWatch();
  const handed: string[] = [];
  const call = fakeCall('/v1/peer/ping');
  holdThenHandOn(call.raw, call.res, watch, (raw) => handed.push(raw.url!));
  return { call, watch, handed };
}

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
  it('holds peer calls only, and only after a stall; a client request is never held', async () => {
    const { watch, time } = steppedWatch();
    const door = new FrontDoor();
    door.skipAbandonedPeerCalls(watch);
    const handled: string[] = [];
    const listener = door.listener((raw) => handled.push(raw.url!));

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
