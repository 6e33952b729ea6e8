/** A route option's hooks as a list (fastify takes one function or an array). */
export function hookList<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : ([hooks].flat() as T[]);
}
