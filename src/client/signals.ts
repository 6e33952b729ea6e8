import type { RegistryClient } from './client.js';

/** What `closeOnSignals` needs of `process` (tests pass a fake). */
export interface SignalTarget {
  readonly pid: number;
  on(signal: NodeJS.Signals, listener: () => void): unknown;
  removeListener(signal: NodeJS.Signals, listener: () => void): unknown;
  listenerCount(signal: NodeJS.Signals): number;
  kill(pid: number, signal: NodeJS.Signals): unknown;
}

export interface CloseOnSignalsOptions {
  /** Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /** Default `process`. */
  target?: SignalTarget;
  /** Called once the client is closed, before the signal is passed on. */
  onClosed?: (signal: NodeJS.Signals) => void;
}

/**
 * Opt-in: on the first SIGTERM or SIGINT, closes the client (its instances are cancelled
 * before the process goes), then lets the signal do what it would have done. If the
 * application listens for the signal itself, its own handler decides (it was called too);
 * otherwise the signal is raised again, and Node's default action (exit) applies. Returns a
 * function that removes the handlers.
 */
export function closeOnSignals(client: Pick<RegistryClient, 'close'>, options: CloseOnSignalsOptions = {}): () => void {
  const target = options.target ?? process;
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const listeners = new Map<NodeJS.Signals, () => void>();
  const remove = () => {
    for (const [signal, listener] of listeners) target.removeListener(signal, listener);
    listeners.clear();
  };
  for (const signal of signals) {
    const listener = () => {
      remove();
      void client
        .close()
        .catch(() => undefined)
        .then(() => {
          options.onClosed?.(signal);
          if (target.listenerCount(signal) === 0) target.kill(target.pid, signal);
        });
    };
    listeners.set(signal, listener);
    target.on(signal, listener);
  }
  return remove;
}
