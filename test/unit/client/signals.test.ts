import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closeOnSignals, type SignalTarget } from '../../../src/client/signals.js';
import { settle } from '../../support/fake-clock.js';

/** A stand-in for `process`: records the signals raised again. */
class FakeProcess extends EventEmitter implements SignalTarget {
  readonly pid = 4242;
  readonly raised: [number, string][] = [];
  kill(pid: number, signal: NodeJS.Signals): boolean {
    this.raised.push([pid, signal]);
    return true;
  }
  override on(signal: NodeJS.Signals, listener: () => void): this {
    return super.on(signal, listener);
  }
  override removeListener(signal: NodeJS.Signals, listener: () => void): this {
    return super.removeListener(signal, listener);
  }
  override listenerCount(signal: NodeJS.Signals): number {
    return super.listenerCount(signal);
  }
}

function fakeClient() {
  const events: string[] = [];
  let release: () => void = () => {};
  return {
    events,
    finishClose: () => release(),
    client: {
      close: () => {
        events.push('close');
        return new Promise<void>((resolve) => {
          release = () => {
            events.push('closed');
            resolve();
          };
        });
      },
    },
  };
}

describe('closeOnSignals', () => {
  it('closes the client on SIGTERM, then raises the signal again so the process exits as it would have', async () => {
    const target = new FakeProcess();
    const { client, events, finishClose } = fakeClient();
    closeOnSignals(client, { target, onClosed: (signal) => events.push(`onClosed ${signal}`) });
    expect(target.listenerCount('SIGTERM')).toBe(1);
    expect(target.listenerCount('SIGINT')).toBe(1);
    target.emit('SIGTERM');
    await settle();
    // Not before the client is closed (its instances cancelled).
    expect(target.raised).toEqual([]);
    finishClose();
    await settle();
    expect(events).toEqual(['close', 'closed', 'onClosed SIGTERM']);
    expect(target.raised).toEqual([[4242, 'SIGTERM']]);
    // Its handlers are gone, so the raised signal gets the default action.
    expect(target.listenerCount('SIGTERM')).toBe(0);
    expect(target.listenerCount('SIGINT')).toBe(0);
  });

  it("leaves the decision to the application's own handler when there is one", async () => {
    const target = new FakeProcess();
    const { client, finishClose } = fakeClient();
    let own = 0;
    target.on('SIGINT', () => (own += 1));
    closeOnSignals(client, { target });
    target.emit('SIGINT');
    finishClose();
    await settle();
    expect(own).toBe(1);
    expect(target.raised).toEqual([]);
  });

  it('still passes the signal on when closing fails', async () => {
    const target = new FakeProcess();
    closeOnSignals({ close: () => Promise.reject(new Error('boom')) }, { target, signals: ['SIGHUP'] });
    target.emit('SIGHUP');
    await settle();
    expect(target.raised).toEqual([[4242, 'SIGHUP']]);
  });

  it('can be undone', () => {
    const target = new FakeProcess();
    const { client, events } = fakeClient();
    const undo = closeOnSignals(client, { target });
    undo();
    target.emit('SIGTERM');
    expect(events).toEqual([]);
    expect(target.listenerCount('SIGTERM')).toBe(0);
  });
});
