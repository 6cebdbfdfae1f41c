import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { assertTokenScope } from '../core/api-tokens/token-scope.js';
import type { Authenticator, Caller } from '../core/auth/authenticator.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | undefined;
  }
  interface FastifyContextConfig {
    /** Routes that do their own authentication (e.g. /login). */
    public?: boolean;
    /** Routes a two-factor login token may call (/verify-2fa, POST /me/totp-secret). */
    loginToken?: boolean;
  }
}

export type Credentials =
  | { scheme: 'basic'; username: string; password: string }
  | { scheme: 'bearer'; token: string }
  | { scheme: 'none' };

export function readCredentials(request: FastifyRequest): Credentials {
  const header = request.headers.authorization;
  if (!header) return { scheme: 'none' };
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && value) return { scheme: 'bearer', token: value };
  if (scheme === 'basic' && value) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0)
      return { scheme: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  throw new AppError(
    'unauthenticated',
    ERROR_CODES.authRequired,
    'Malformed Authorization header',
    'use "Basic base64(username:password)" or "Bearer <token>"',
  );
}

export const authRequired = (): AppError =>
  new AppError(
    'unauthenticated',
    ERROR_CODES.authRequired,
    'Authentication required',
    'send HTTP Basic credentials or a Bearer token from GET /api/v1/login',
  );

export async function authenticate(auth: Authenticator, request: FastifyRequest): Promise<Caller> {
  const credentials = readCredentials(request);
  switch (credentials.scheme) {
    case 'basic':
      return auth.checkBasic(credentials.username, credentials.password, request.ip);
    case 'bearer':
      return auth.checkToken(credentials.token, {
        acceptLoginToken: request.routeOptions.config.loginToken === true,
      });
    case 'none':
      throw authRequired();
  }
}

/**
 * Every route is authenticated unless its config says `public: true`. This runs as soon as the headers are in,
 * before the body is read: a request without valid credentials gets 401 whatever its body holds.
 */
export function registerAuthHook(app: FastifyInstance, auth: Authenticator): void {
  app.decorateRequest('caller', undefined);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.public) return;
    request.caller = await authenticate(auth, request);
    assertTokenScope(request.caller, request.method, request.routeOptions.url ?? request.url);
  });
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw authRequired();
  return request.caller;
}
