import type { FastifyInstance } from 'fastify';
import { verifyTwoFaBodySchema } from '@svc/protocol';
import type { TwoFactorService } from '../../core/two-factor/two-factor-service.js';
import type { TotpSecretsService } from '../../core/two-factor/totp-secrets-service.js';
import { twoFactorErrors } from '../../core/two-factor/errors.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { parseLifetime } from './login.js';

/** POST /verify-2fa (spec 4.1) and the TOTP secret endpoints (spec 4.2). */
export function twoFactorRoutes(
  app: FastifyInstance,
  login: TwoFactorService | undefined,
  totp: TotpSecretsService,
): void {
  app.post('/verify-2fa', { config: { loginToken: true } }, async (request) => {
    if (!login) throw twoFactorErrors.disabled();
    const caller = callerOf(request);
    const lifetime = parseLifetime((request.query as Record<string, unknown>)['token-lifetime']);
    const body = parseBody(verifyTwoFaBodySchema, request.body);
    return { data: await login.verify(caller, body, lifetime) };
  });

  app.post('/me/totp-secret', { config: { loginToken: true } }, async (request) =>
    totp.create(callerOf(request)),
  );
  app.get('/me/totp-secret', async (request) => totp.get(callerOf(request)));
  app.delete('/me/totp-secret', async (request, reply) => {
    await totp.deleteOwn(callerOf(request));
    return reply.status(204).send();
  });
  app.delete<{ Params: { username: string } }>('/users/:username/totp-secret', async (request, reply) => {
    await totp.deleteFor(callerOf(request), request.params.username);
    return reply.status(204).send();
  });
}
