import type { FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES, updateMeBodySchema, type MeData, type MeIpData } from '@svc/protocol';
import type { MeService } from '../../core/users/me-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { callerIp } from '../caller-ip.js';

/** Sent with a change written to the user file: it waits there until svcd reads the file again. */
const PENDING_RELOAD = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };

const legacyTokenGone = () =>
  new AppError(
    'gone',
    ERROR_CODES.gone,
    'use new token management on /me/tokens',
    'the single token of /me/token was replaced by any number of tokens: GET/POST /api/v1/me/tokens',
  );

/** The caller's own account (GET/PUT /me, GET /me/ip) and the retired single-token API (410). */
export function meRoutes(app: FastifyInstance, me: MeService): void {
  app.get('/me', (request) => {
    const data: MeData = me.describe(callerOf(request).user);
    return Promise.resolve({ data });
  });

  app.put('/me', async (request, reply) => {
    const body = parseBody(updateMeBodySchema, request.body);
    const caller = callerOf(request).user;
    const { inEffect } = await me.update(caller, body, request.ip);
    if (inEffect) return reply.status(204).send();
    return reply.status(200).send({ data: { username: caller.username }, meta: PENDING_RELOAD });
  });

  app.get('/me/ip', (request) => {
    const data: MeIpData = { ip: callerIp(request) };
    return Promise.resolve({ data });
  });

  const gone = () => Promise.reject(legacyTokenGone());
  app.get('/me/token', gone);
  app.post('/me/token', gone);
  app.put('/me/token/:any', gone);
  app.delete('/me/token/:any', gone);
}
