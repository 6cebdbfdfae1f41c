import type { ApiTokenScope } from '@svc/protocol';
import { apiTokenErrors } from './api-token-errors.js';

const READ_METHODS = new Set(['GET', 'HEAD']);
const WEBSOCKET_PATH = /(^|\/)ws(\/|$)/;
const CLIENTS_AUTH_PATH = /(^|\/)clients-auth(\/|$)/;

/**
 * Whether a token of `scope` may make a request (`path` is the route, e.g. /api/v1/clients-auth/:id):
 * `read` allows GET (and HEAD) except on WebSockets, which run commands; `read+write` allows everything;
 * `clients-auth` allows only the client credentials API, with any method.
 */
export function scopeAllows(scope: ApiTokenScope, method: string, path: string): boolean {
  switch (scope) {
    case 'read+write':
      return true;
    case 'read':
      return READ_METHODS.has(method.toUpperCase()) && !WEBSOCKET_PATH.test(path);
    case 'clients-auth':
      return CLIENTS_AUTH_PATH.test(path);
  }
}

/** Throws the 403 when the caller came with an API token whose scope does not cover the request. */
export function assertTokenScope(
  caller: { apiToken?: { scope: ApiTokenScope } },
  method: string,
  path: string,
): void {
  const scope = caller.apiToken?.scope;
  if (scope !== undefined && !scopeAllows(scope, method, path))
    throw apiTokenErrors.scopeRefused(scope, method, path);
}
