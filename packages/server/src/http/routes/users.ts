import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  applyListQuery,
  createUserBodySchema,
  parseListQuery,
  updateUserBodySchema,
  userListEntrySchema,
  userListItemSchema,
  type ListSpec,
} from '@svc/protocol';
import { z } from 'zod';
import type { UsersService, WriteOutcome } from '../../core/users/users-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import {
  data,
  dataWithMeta,
  documented,
  empty,
  list,
  sparse,
  type ApiOperation,
} from '../openapi/operation.js';

const USER_LIST: ListSpec = {
  resource: 'users',
  sortable: ['username'],
  defaultSort: 'username',
  filterable: ['username', 'groups'],
  fields: ['username', 'groups', 'two_fa'],
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

/** Sent with every write to the user file: the change waits in the file until svcd reads it again. */
const PENDING_RELOAD = { takes_effect: 'after svcd reloads the user file (SIGUSR1) or restarts' };

const pendingReloadSchema = z.object({ takes_effect: z.string() });
const ADMINS_ONLY = 'Administrators only.';
const IN_EFFECT = 'Done (database user tables)';
const PENDING = 'Written to the user file; in force after svcd reloads it (meta.takes_effect)';

const OPERATIONS = {
  list: {
    tag: 'users',
    summary: 'List users',
    description: ADMINS_ONLY,
    access: 'administrators',
    list: USER_LIST,
    responses: [list(sparse(userListEntrySchema))],
  },
  create: {
    tag: 'users',
    summary: 'Create a user',
    description: ADMINS_ONLY,
    access: 'administrators',
    body: createUserBodySchema,
    responses: [
      data(userListItemSchema, 201, 'Created'),
      dataWithMeta(userListItemSchema, pendingReloadSchema, 201, PENDING),
    ],
  },
  update: {
    tag: 'users',
    summary: 'Change a user',
    description: ADMINS_ONLY,
    access: 'administrators',
    body: updateUserBodySchema,
    responses: [empty(204, IN_EFFECT), dataWithMeta(userListItemSchema, pendingReloadSchema, 200, PENDING)],
  },
  delete: {
    tag: 'users',
    summary: 'Delete a user',
    description: ADMINS_ONLY,
    access: 'administrators',
    responses: [
      empty(204, IN_EFFECT),
      dataWithMeta(userListItemSchema.pick({ username: true }), pendingReloadSchema, 200, PENDING),
    ],
  },
} satisfies Record<string, ApiOperation>;

/**
 * Changes and deletions answer 204 where they are in force at once (database tables); for the user file they
 * answer 200 with the user and `meta.takes_effect`, so a client sees that nothing has changed yet.
 */
function sendChange(reply: FastifyReply, outcome: WriteOutcome, data: object): FastifyReply {
  if (outcome.inEffect) return reply.status(204).send();
  return reply.status(200).send({ data, meta: PENDING_RELOAD });
}

export function userRoutes(app: FastifyInstance, users: UsersService): void {
  app.get('/users', documented(OPERATIONS.list), async (request) => {
    const all = await users.list(callerOf(request).user);
    const query = parseListQuery(request.query as Record<string, unknown>, USER_LIST);
    const { data, count } = applyListQuery(all, query);
    return { data, meta: { count } };
  });

  app.post('/users', documented(OPERATIONS.create), async (request, reply) => {
    const caller = callerOf(request).user;
    users.assertMayManage(caller);
    const body = parseBody(createUserBodySchema, request.body);
    const outcome = await users.create(caller, body);
    const data = outcome.user;
    return reply.status(201).send(outcome.inEffect ? { data } : { data, meta: PENDING_RELOAD });
  });

  app.put<{ Params: { username: string } }>(
    '/users/:username',
    documented(OPERATIONS.update),
    async (request, reply) => {
      const caller = callerOf(request).user;
      users.assertMayManage(caller);
      const body = parseBody(updateUserBodySchema, request.body);
      const outcome = await users.update(caller, request.params.username, body);
      return sendChange(reply, outcome, outcome.user);
    },
  );

  app.delete<{ Params: { username: string } }>(
    '/users/:username',
    documented(OPERATIONS.delete),
    async (request, reply) => {
      const outcome = await users.delete(callerOf(request).user, request.params.username);
      return sendChange(reply, outcome, { username: outcome.user.username });
    },
  );
}
