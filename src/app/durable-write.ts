import type { Durability } from '../persistence/durability.js';

declare const acknowledged: unique symbol;

/**
 * A write's result that may be acknowledged: the write is durable under the sync policy. Only
 * the application layer's writes (writes.ts) produce one; a route gets at the value with
 * `whenDurable`, so it cannot answer with a write's result before the data dir holds it. The
 * brand is a type only: at run time the value is the write's own result, not a wrapper.
 */
export type Acknowledged<T> = T & { readonly [acknowledged]: true };

/** A write's result, acknowledged now, or once the durability barrier is passed. */
export type Durable<T> = Acknowledged<T> | Promise<Acknowledged<T>>;

/**
 * Runs a registry write and resolves once it is durable under the sync policy, so that no
 * answer acknowledges a write the data dir does not hold. `refuseWhenFailed` answers
 * REG_ERR_STORAGE before touching the store while the data dir refuses writes; heartbeats pass
 * false: they only renew a lease, unless they take an instance over, and that write is then
 * logged like any other.
 *
 * When there is nothing to wait for (no data dir, or a heartbeat that only renewed a lease) the
 * result comes back as is, not in a promise: the hot routes then answer in the same tick,
 * without the two microtask hops an `await` costs per request (see bench/cpu-per-request.ts).
 */
export function durableWrite<T>(durability: Durability, write: () => T, refuseWhenFailed = true): T | Promise<T> {
  if (refuseWhenFailed) durability.assertWritable();
  const mark = durability.mark();
  const result = write();
  const pending = durability.barrier(mark);
  return pending === undefined ? result : pending.then(() => result);
}

/** Applies `next` to a value that may still be pending, without a promise when it is not. */
export function andThen<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/**
 * The reply side of a write: `next` builds the answer from the write's result once it is
 * durable, in the same tick when nothing was waited for. Takes only an acknowledged result.
 */
export function whenDurable<T, R>(result: Durable<T>, next: (value: T) => R): R | Promise<R> {
  return andThen<T, R>(result, next);
}
