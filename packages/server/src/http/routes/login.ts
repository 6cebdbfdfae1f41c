import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, loginDataSchema, type LoginData } from '@svc/protocol';
import { z } from 'zod';
import type { Authenticator } from '../../core/auth/authenticator.js';
import type { DelegatedLogin } from '../../core/auth/delegated-login.js';
import type { TwoFactorService } from '../../core/two-factor/two-factor-service.js';
import { authRequired, readCredentials } from '../auth.js';
import { proxiedUserName, type DelegatedHeaders } from '../delegated-headers.js';
import { data, documented, empty, type ApiOperation, type QueryParameter } from '../openapi/operation.js';

/** `token-lifetime` of GET /login and POST /verify-2fa. */
export const TOKEN_LIFETIME: QueryParameter = {
  name: 'token-lifetime',
  description: 'Lifetime of the token in seconds (at most [api] max_token_lifetime).',
  schema: z.string().regex(/^[1-9][0-9]*$/),
};

const LOGIN: ApiOperation = {
  tag: 'login',
  summary: 'Log in: a Bearer token for the Basic credentials',
  description:
    'With two-factor login configured, the token is a login token good only for POST /verify-2fa (and, with an ' +
    'authenticator app, POST /me/totp-secret), and two_fa says where the code went.',
  security: 'basic',
  query: [TOKEN_LIFETIME],
  responses: [data(loginDataSchema)],
};

const LOGOUT: ApiOperation = {
  tag: 'login',
  summary: 'Revoke the Bearer token of this request',
  responses: [empty(204, 'Revoked')],
};

const RENEW: ApiOperation = {
  tag: 'login',
  summary: 'Renew the Bearer token of this request: a new one, the old one revoked',
  description:
    'For a session that should outlive its token (the web console renews shortly before the end) without ' +
    "asking for the password or the second factor again. The new token has the old one's lifetime unless " +
    'token-lifetime says otherwise, and the same two-factor standing. The old token stops working at once, so ' +
    'a token renews only once. Needs a Bearer token from GET /login or POST /verify-2fa: HTTP Basic and ' +
    'personal API tokens get 400; the first-step token of a two-factor login is refused (401).',
  query: [TOKEN_LIFETIME],
  responses: [data(loginDataSchema)],
};

/** Delegated authentication (`[api] auth_header`): honoured on GET /login only. */
export interface DelegatedAuth extends DelegatedHeaders {
  login: DelegatedLogin;
}

export interface LoginOptions {
  /** A second factor is configured: /login issues a login token and starts the second step. */
  twoFactor?: TwoFactorService;
  delegated?: DelegatedAuth;
}

const renewalNeedsBearer = () =>
  new AppError(
    'invalid',
    ERROR_CODES.invalidRequest,
    'Renewal needs the Bearer token to renew',
    'send Authorization: Bearer <token from GET /login>; HTTP Basic and personal API tokens have no session to renew',
  );

export function parseLifetime(raw: unknown): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const text = typeof raw === 'string' ? raw : undefined;
  if (text === undefined || !/^\d+$/.test(text) || Number(text) < 1) {
    throw new AppError(
      'invalid',
      ERROR_CODES.invalidQuery,
      'token-lifetime must be a positive whole number of seconds',
      `got ${JSON.stringify(raw)}`,
    );
  }
  return Number(text);
}

async function checkBasicPassword(auth: Authenticator, request: FastifyRequest) {
  const credentials = readCredentials(request);
  if (credentials.scheme !== 'basic') throw authRequired();
  return auth.checkPassword(credentials.username, credentials.password, request.ip);
}

export function loginRoutes(app: FastifyInstance, auth: Authenticator, options: LoginOptions = {}): void {
  const { twoFactor, delegated } = options;
  app.get('/login', documented(LOGIN, { public: true }), async (request) => {
    const query = request.query as Record<string, unknown>;
    const lifetime = parseLifetime(query['token-lifetime']);
    const proxied = delegated && proxiedUserName(request, delegated);
    const user =
      proxied === undefined || !delegated
        ? await checkBasicPassword(auth, request)
        : await delegated.login.userFor(proxied);
    // A configured second factor applies to delegated logins too: the proxy vouches for the password only.
    if (twoFactor) {
      const requester = { ip: request.ip, userAgent: request.headers['user-agent'] ?? '' };
      return { data: await twoFactor.startLogin(user, lifetime, requester) };
    }
    const { token } = await auth.login(user, lifetime);
    const data: LoginData = { token, two_fa: null };
    return { data };
  });

  app.delete('/logout', documented(LOGOUT), async (request, reply) => {
    const sessionId = request.caller?.sessionId;
    if (!sessionId) {
      throw new AppError(
        'invalid',
        ERROR_CODES.invalidRequest,
        'Logout needs the Bearer token to revoke',
        'send Authorization: Bearer <token>',
      );
    }
    await auth.logout(sessionId);
    return reply.status(204).send();
  });

  app.post('/me/token-renewal', documented(RENEW), async (request) => {
    const lifetime = parseLifetime((request.query as Record<string, unknown>)['token-lifetime']);
    const credentials = readCredentials(request);
    if (credentials.scheme !== 'bearer' || !request.caller?.sessionId) throw renewalNeedsBearer();
    const { token } = await auth.renew(credentials.token, lifetime);
    const data: LoginData = { token, two_fa: null };
    return { data };
  });
}
