/**
 * Which methods the routes of a path take, for a 405 with `Allow` when a known path is asked
 * with another method. Fastify answers such a request through its not-found handler and has
 * no public lookup from a concrete path to the methods of the routes that match it (its
 * `hasRoute`/`findRoute` compare route patterns, not paths), so the patterns are collected as
 * routes are added and matched here. Only the not-found path pays for it.
 */
export class RouteMethods {
  private readonly routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  /** A route as fastify adds it: `url` is its pattern, e.g. `/v1/services/:service`. */
  add(method: string, url: string): void {
    let route = this.routes.get(url);
    if (!route) {
      route = { pattern: patternOf(url), methods: new Set() };
      this.routes.set(url, route);
    }
    route.methods.add(method.toUpperCase());
  }

  /** The methods of every route whose pattern matches `path` (no query), sorted; empty for an unknown path. */
  methodsFor(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes.values()) {
      if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}

/** A fastify route pattern as a regular expression: `:name` is one path segment, `*` the rest. */
export function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}
