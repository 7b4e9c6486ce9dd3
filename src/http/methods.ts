// The methods each route takes, so that a request whose path names a route but not one of its methods is answered
// 405 with Allow (RFC 9110, 15.5.6), where Fastify's router finds nothing and would answer 404.
import type { RouteOptions } from 'fastify';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export class RouteMethods {
  /** Static paths, and the parametric ones as patterns (`:name` one segment, `*` the rest). */
  readonly #static = new Map<string, Set<string>>();
  readonly #patterns: { pattern: RegExp; methods: Set<string> }[] = [];

  /** The onRoute hook. */
  readonly add = (route: RouteOptions): void => {
    const { url } = route;
    let methods: Set<string> | undefined;
    if (!/[:*]/.test(url)) {
      methods = this.#static.get(url) ?? new Set();
      this.#static.set(url, methods);
    } else {
      const source = url
        .split('/')
        .map((s) => (s.startsWith(':') ? '[^/]+' : s === '*' ? '.*' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      const found = this.#patterns.find((p) => p.pattern.source === `^${source}$`);
      methods = found?.methods ?? new Set();
      if (!found) this.#patterns.push({ pattern: new RegExp(`^${source}$`), methods });
    }
    for (const m of [route.method].flat()) methods.add(m.toUpperCase());
    // Fastify serves HEAD for every GET route (exposeHeadRoutes) without an onRoute call of its own.
    if (methods.has('GET') && route.exposeHeadRoute !== false) methods.add('HEAD');
  };

  /** The methods the route at `url` takes (query string ignored), in the usual order; undefined for no route. */
  allowed(url: string): string[] | undefined {
    const path = url.split('?', 1)[0];
    const methods = this.#static.get(path) ?? this.#patterns.find((p) => p.pattern.test(path))?.methods;
    return methods && [...methods].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
  }
}
