import type { ErrorKind } from '@svc/protocol';

/** The one table from error kind to HTTP status. */
export const STATUS_BY_KIND: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  timeout: 408,
  conflict: 409,
  gone: 410,
  too_large: 413,
  headers_too_large: 431,
  banned: 423,
  throttled: 429,
  unavailable: 503,
  internal: 500,
};
