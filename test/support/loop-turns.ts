/**
 * Runs `work` and counts the turns of the event loop that pass until it is done (a setImmediate
 * chain): an answer written in one go completes within a turn or two, a paced one takes about
 * one turn per piece. For tests of big answers sent at the shared pace (src/http/paced-body.ts).
 */
export async function turnsWhile<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let counting = true;
  const tick = () => {
    turns += 1;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const result = await work();
    return { result, turns };
  } finally {
    counting = false;
  }
}
