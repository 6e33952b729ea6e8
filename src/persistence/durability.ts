/**
 * The seam between the write routes and persistence. A write route checks `assertWritable()`
 * before touching the store, takes a `mark()`, calls the registry, then awaits
 * `barrier(mark)` before answering: the answer is sent only once the write is durable under
 * the sync policy, and a disk error becomes a `REG_ERR_STORAGE` answer instead of a success.
 */
export interface Durability {
  /** False until the data dir has been loaded into the store (client routes answer 503 meanwhile). */
  readonly restored: boolean;
  /** Throws `REG_ERR_STORAGE` while the data dir refuses writes. */
  assertWritable(): void;
  /** A mark of what has been appended so far. */
  mark(): number;
  /**
   * Resolves when everything appended since `mark` is durable under the sync policy; rejects
   * with `REG_ERR_STORAGE` when it could not be made durable. Undefined when it already is
   * (nothing appended, or nothing to wait for): the write path then answers synchronously.
   */
  barrier(mark: number): Promise<void> | undefined;
}

/** A peer without a data dir: purely in memory, nothing to wait for. */
export const inMemoryDurability: Durability = {
  restored: true,
  assertWritable: () => undefined,
  mark: () => 0,
  barrier: () => undefined,
};
