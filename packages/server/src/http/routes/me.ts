import type { FastifyInstance } from 'fastify';
import {
  AppError,
  ERROR_CODES,
  meDataSchema,
  meIpDataSchema,
  updateMeBodySchema,
  type MeData,
  type MeIpData,
} from '@svc/protocol';
import { z } from 'zod';
import type { MeService } from '../../core/users/me-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { callerIp } from '../caller-ip.js';
import { data, dataWithMeta, documented, empty, type ApiOperation } from '../openapi/operation.js';

/** Sent with a change written to the user file: it waits there until svcd reads the file again. */
const PENDING_RELOAD = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };

const OPERATIONS = {
  get: { tag: 'me', summary: 'The caller', responses: [data(meDataSchema)] },
  update: {
    tag: 'me',
    summary: "Change the caller's password or two_fa_send_to",
    body: updateMeBodySchema,
    responses: [
      empty(204, 'Done (database user tables)'),
      dataWithMeta(
        meDataSchema.pick({ username: true }),
        z.object({ takes_effect: z.string() }),
        200,
        'Written to the user file; in force after svcd reloads it (meta.takes_effect)',
      ),
    ],
  },
  ip: { tag: 'me', summary: "The caller's IP address as svcd sees it", responses: [data(meIpDataSchema)] },
  gone: {
    tag: 'me',
    summary: 'Retired single API token: always 410, use /me/tokens',
    responses: [],
  },
} satisfies Record<string, ApiOperation>;

const legacyTokenGone = () =>
  new AppError(
    'gone',
    ERROR_CODES.gone,
    'use new token management on /me/tokens',
    'the single token of /me/token was replaced by any number of tokens: GET/POST /api/v1/me/tokens',
  );

/** The caller's own account (GET/PUT /me, GET /me/ip) and the retired single-token API (410). */
export function meRoutes(app: FastifyInstance, me: MeService): void {
  app.get('/me', documented(OPERATIONS.get), async (request) => {
    const data: MeData = await me.describe(callerOf(request).user);
    return { data };
  });

  app.put('/me', documented(OPERATIONS.update), async (request, reply) => {
    const body = parseBody(updateMeBodySchema, request.body);
    const caller = callerOf(request).user;
    const { inEffect } = await me.update(caller, body, request.ip);
    if (inEffect) return reply.status(204).send();
    return reply.status(200).send({ data: { username: caller.username }, meta: PENDING_RELOAD });
  });

  app.get('/me/ip', documented(OPERATIONS.ip), (request) => {
    const data: MeIpData = { ip: callerIp(request) };
    return Promise.resolve({ data });
  });

  const gone = () => Promise.reject(legacyTokenGone());
  const retired = documented(OPERATIONS.gone);
  app.get('/me/token', retired, gone);
  app.post('/me/token', retired, gone);
  app.put('/me/token/:any', retired, gone);
  app.delete('/me/token/:any', retired, gone);
}
