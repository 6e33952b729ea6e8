import type { Durability } from '../persistence/durability.js';

/**
 * Runs a registry write and resolves once it is durable under the sync policy, so that no
 * answer acknowledges a write the data dir does not hold (without a data dir: at once).
 * `refuseWhenFailed` answers REG_ERR_STORAGE before touching the store while the data dir
 * refuses writes; heartbeats pass false: they only renew a lease, unless they take an
 * instance over, and that write is then logged like any other.
 */
export async function durableWrite<T>(durability: Durability, write: () => T, refuseWhenFailed = true): Promise<T> {
  if (refuseWhenFailed) durability.assertWritable();
  const mark = durability.mark();
  const result = write();
  await durability.barrier(mark);
  return result;
}
