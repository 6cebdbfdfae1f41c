import type { FastifyInstance } from 'fastify';
import {
  applyListQuery,
  createUserBodySchema,
  parseListQuery,
  updateUserBodySchema,
  type ListSpec,
} from '@svc/protocol';
import type { UsersService } from '../../core/users/users-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

/** The user list is not paginated (spec 4.3 shows a plain array) but takes sort, filter and fields. */
const USER_LIST: ListSpec = {
  resource: 'users',
  sortable: ['username'],
  defaultSort: 'username',
  filterable: ['username', 'groups'],
  fields: ['username', 'groups'],
};

const PENDING_RELOAD = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };

export function userRoutes(app: FastifyInstance, users: UsersService): void {
  app.get('/users', async (request) => {
    const all = await users.list(callerOf(request).user);
    const query = parseListQuery(request.query as Record<string, unknown>, USER_LIST);
    return { data: applyListQuery(all, query).data };
  });

  app.post('/users', async (request, reply) => {
    const body = parseBody(createUserBodySchema, request.body);
    const outcome = await users.create(callerOf(request).user, body);
    const data = { username: body.username, groups: [...new Set(body.groups ?? [])] };
    return reply.status(201).send(outcome.inEffect ? { data } : { data, meta: PENDING_RELOAD });
  });

  app.put<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    const body = parseBody(updateUserBodySchema, request.body);
    await users.update(callerOf(request).user, request.params.username, body);
    return reply.status(204).send();
  });

  app.delete<{ Params: { username: string } }>('/users/:username', async (request, reply) => {
    await users.delete(callerOf(request).user, request.params.username);
    return reply.status(204).send();
  });
}
