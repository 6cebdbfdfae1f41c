import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  applyListQuery,
  createUserBodySchema,
  parseListQuery,
  updateUserBodySchema,
  type ListSpec,
} from '@svc/protocol';
import type { UsersService, WriteOutcome } from '../../core/users/users-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

const USER_LIST: ListSpec = {
  resource: 'users',
  sortable: ['username'],
  defaultSort: 'username',
  filterable: ['username', 'groups'],
  fields: ['username', 'groups'],
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

/** Sent with every write to the user file: the change waits in the file until svcd reads it again. */
const PENDING_RELOAD = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };

/**
 * Changes and deletions answer 204 where they are in force at once (database tables); for the user file they
 * answer 200 with the user and `meta.takes_effect`, so a client sees that nothing has changed yet.
 */
function sendChange(reply: FastifyReply, outcome: WriteOutcome, data: object): FastifyReply {
  if (outcome.inEffect) return reply.status(204).send();
  return reply.status(200).send({ data, meta: PENDING_RELOAD });
}

export function userRoutes(app: FastifyInstance, users: UsersService): void {
  app.get('/users', async (request) => {
    const all = await users.list(callerOf(request).user);
    const query = parseListQuery(request.query as Record<string, unknown>, USER_LIST);
    const { data, count } = applyListQuery(all, query);
    return { data, meta: { count } };
  });

  app.post('/users', async (request, reply) => {
    const body = parseBody(createUserBodySchema, request.body);
    const outcome = await users.create(callerOf(request).user, body);
    const data = outcome.user;
    return reply.status(201).send(outcome.inEffect ? { data } : { data, meta: PENDING_RELOAD });
  });

  app.put<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    const body = parseBody(updateUserBodySchema, request.body);
    const outcome = await users.update(callerOf(request).user, request.params.username, body);
    return sendChange(reply, outcome, outcome.user);
  });

  app.delete<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    const outcome = await users.delete(callerOf(request).user, request.params.username);
    return sendChange(reply, outcome, { username: outcome.user.username });
  });
}
