import type { FastifyInstance } from 'fastify';

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `/clients/:client_id/tunnels` → a pattern matching any one segment where a parameter stands. */
function patternOf(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment === '*') return '.*';
    if (segment.startsWith(':')) return '[^/]+';
    return escapeRegExp(segment);
  });
  return new RegExp(`^${segments.join('/')}$`);
}

/**
 * The methods registered for each path, so that a known path asked with another method gets 405 with an
 * Allow header instead of 404. Collects routes through an onRoute hook: create it before registering routes.
 */
export class RouteMethods {
  private readonly paths = new Map<string, KnownPath>();

  constructor(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      let known = this.paths.get(route.url);
      if (!known) {
        known = { pattern: patternOf(route.url), methods: new Set() };
        this.paths.set(route.url, known);
      }
      for (const method of methods) known.methods.add(method.toUpperCase());
    });
  }

  /** The methods allowed on a concrete path (no query), sorted; empty when no route has this path. */
  allowedOn(path: string): string[] {
    const allowed = new Set<string>();
    for (const { pattern, methods } of this.paths.values()) {
      if (pattern.test(path)) for (const method of methods) allowed.add(method);
    }
    return [...allowed].sort();
  }
}
