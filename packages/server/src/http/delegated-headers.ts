import type { FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES } from '@svc/protocol';

/** `[api] auth_header` and `user_header`, as configured. */
export interface DelegatedHeaders {
  authHeader: string;
  userHeader: string;
}

const headerValue = (request: FastifyRequest, name: string): string => {
  const value = request.headers[name.toLowerCase()];
  return (Array.isArray(value) ? value.join(', ') : (value ?? '')).trim();
};

/**
 * The user a reverse proxy vouches for: undefined when the auth header is absent or empty (the request then
 * needs its own credentials); a 401 when the proxy marked it authenticated but named nobody.
 */
export function proxiedUserName(request: FastifyRequest, headers: DelegatedHeaders): string | undefined {
  if (headerValue(request, headers.authHeader) === '') return undefined;
  const name = headerValue(request, headers.userHeader);
  if (name === '') {
    throw new AppError(
      'unauthenticated',
      ERROR_CODES.authRequired,
      `The request carries ${headers.authHeader} but no user name in ${headers.userHeader}`,
      'the reverse proxy must set both headers',
    );
  }
  return name;
}
