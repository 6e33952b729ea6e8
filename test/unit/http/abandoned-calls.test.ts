import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { DEADLINE_SLACK_MS, holdThenHandOn, skippedPastDeadline } from '../../../src/http/abandoned-calls.js';
import { DEADLINE_HEADER } from '../../../src/transport/http-transport.js';
import { FrontDoor } from '../../../src/http/front-door.js';
import { steppedWatch } from '../../support/stall-watch.js';

/**
 * The hold of peer calls after a stall (src/http/abandoned-calls.ts): a peer that stood still
 * skips the peer calls whose caller gave up meanwhile, and holds nothing otherwise. The watch's
 * time is the test's; the hold's turns of the loop are awaited, never slept.
 */

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A request whose socket the test closes from the caller's side (`leave`) or not. */
function fakeCall(url: string, headers: Record<string, string> = {}): { raw: IncomingMessage; res: ServerResponse; leave(): void; destroyed(): boolean } {
  const socket = Object.assign(new EventEmitter(), {
    destroyed: false,
    readableEnded: false,
    destroy() {
      socket.destroyed = true;
    },
  });
  const raw = { url, headers, destroyed: false, socket } as unknown as IncomingMessage;
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

describe('a call past its deadline', () => {
  it('is skipped at once when its caller\'s deadline passed by more than the slack, and kept otherwise', () => {
    const { watch } = steppedWatch();
    const nowMs = 1_000_000;
    const late = fakeCall('/v1/peer/replicate', { [DEADLINE_HEADER]: String(nowMs - DEADLINE_SLACK_MS - 1) });
    const withinSlack = fakeCall('/v1/peer/replicate', { [DEADLINE_HEADER]: String(nowMs - DEADLINE_SLACK_MS) });
    const none = fakeCall('/v1/peer/replicate');
    const garbled = fakeCall('/v1/peer/replicate', { [DEADLINE_HEADER]: 'soon' });
    expect([late, withinSlack, none, garbled].map((call) => skippedPastDeadline(call.raw, watch, nowMs))).toEqual([true, false, false, false]);
    expect(late.destroyed()).toBe(true);
    expect(withinSlack.destroyed()).toBe(false);
    expect(watch.droppedTotal).toBe(1);
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
    const waited = fakeCall('/v1/peer/replicate', { [DEADLINE_HEADER]: String(Date.now() + 5_000) });
    const expired = fakeCall('/v1/peer/replicate', { [DEADLINE_HEADER]: String(Date.now() - 10_000) });
    const client = fakeCall('/v1/services/orders');
    client.leave();
    for (const call of [abandoned, waited, expired, client]) listener(call.raw, call.res);
    expect(handled).toEqual(['/v1/peer/ping', '/v1/services/orders']);
    expect(expired.destroyed()).toBe(true);
    abandoned.leave();
    await turn();
    await turn();
    await turn();
    expect(handled).toEqual(['/v1/peer/ping', '/v1/services/orders', '/v1/peer/replicate']);
    expect(abandoned.destroyed()).toBe(true);
    expect(watch.droppedTotal).toBe(2);
  });
});
