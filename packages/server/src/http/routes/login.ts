import type { FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES, type LoginData } from '@svc/protocol';
import type { Authenticator } from '../../core/auth/authenticator.js';
import type { TwoFactorService } from '../../core/two-factor/two-factor-service.js';
import { authRequired, readCredentials } from '../auth.js';

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

export function loginRoutes(app: FastifyInstance, auth: Authenticator, twoFactor?: TwoFactorService): void {
  app.get('/login', { config: { public: true } }, async (request) => {
    const query = request.query as Record<string, unknown>;
    const lifetime = parseLifetime(query['token-lifetime']);
    const credentials = readCredentials(request);
    if (credentials.scheme !== 'basic') throw authRequired();
    const user = await auth.checkPassword(credentials.username, credentials.password, request.ip);
    if (twoFactor) {
      const requester = { ip: request.ip, userAgent: request.headers['user-agent'] ?? '' };
      return { data: await twoFactor.startLogin(user, lifetime, requester) };
    }
    const { token } = await auth.login(user, lifetime);
    const data: LoginData = { token, two_fa: null };
    return { data };
  });

  app.delete('/logout', async (request, reply) => {
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
}
