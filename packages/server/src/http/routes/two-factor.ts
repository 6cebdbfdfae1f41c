import type { FastifyInstance } from 'fastify';
import { loginDataSchema, totpSecretResponseSchema, verifyTwoFaBodySchema } from '@svc/protocol';
import type { TwoFactorService } from '../../core/two-factor/two-factor-service.js';
import type { TotpSecretsService } from '../../core/two-factor/totp-secrets-service.js';
import { twoFactorErrors } from '../../core/two-factor/errors.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { parseLifetime, TOKEN_LIFETIME } from './login.js';
import { data, documented, empty, type ApiOperation } from '../openapi/operation.js';

const TOTP_SECRET = {
  status: 200,
  description: 'The secret and its QR code (base64 PNG), not wrapped in data',
  body: totpSecretResponseSchema,
};

const OPERATIONS = {
  verify: {
    tag: 'two-factor',
    summary: 'Second login step: the code for a full Bearer token',
    description:
      'Send the login token of GET /login as Bearer token. 400 unless two-factor login is configured.',
    query: [TOKEN_LIFETIME],
    body: verifyTwoFaBodySchema,
    responses: [data(loginDataSchema)],
  },
  createTotp: {
    tag: 'two-factor',
    summary: "Create the caller's authenticator-app secret",
    responses: [TOTP_SECRET],
  },
  getTotp: { tag: 'two-factor', summary: "The caller's authenticator-app secret", responses: [TOTP_SECRET] },
  deleteOwnTotp: {
    tag: 'two-factor',
    summary: "Delete the caller's authenticator-app secret",
    responses: [empty(204, 'Deleted')],
  },
  deleteTotp: {
    tag: 'two-factor',
    summary: "Delete a user's authenticator-app secret",
    access: 'administrators',
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

/** POST /verify-2fa (spec 4.1) and the TOTP secret endpoints (spec 4.2). */
export function twoFactorRoutes(
  app: FastifyInstance,
  login: TwoFactorService | undefined,
  totp: TotpSecretsService,
): void {
  app.post('/verify-2fa', documented(OPERATIONS.verify, { loginToken: true }), async (request) => {
    if (!login) throw twoFactorErrors.disabled();
    const caller = callerOf(request);
    const lifetime = parseLifetime((request.query as Record<string, unknown>)['token-lifetime']);
    const body = parseBody(verifyTwoFaBodySchema, request.body);
    return { data: await login.verify(caller, body, lifetime) };
  });

  app.post('/me/totp-secret', documented(OPERATIONS.createTotp, { loginToken: true }), async (request) =>
    totp.create(callerOf(request)),
  );
  app.get('/me/totp-secret', documented(OPERATIONS.getTotp), async (request) => totp.get(callerOf(request)));
  app.delete('/me/totp-secret', documented(OPERATIONS.deleteOwnTotp), async (request, reply) => {
    await totp.deleteOwn(callerOf(request));
    return reply.status(204).send();
  });
  app.delete<{ Params: { username: string } }>(
    '/users/:username/totp-secret',
    documented(OPERATIONS.deleteTotp),
    async (request, reply) => {
      await totp.deleteFor(callerOf(request), request.params.username);
      return reply.status(204).send();
    },
  );
}
