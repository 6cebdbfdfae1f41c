import type { FastifyInstance } from 'fastify';
import { normalizeName, updateUserGroupBodySchema, userGroupSchema } from '@svc/protocol';
import type { UserGroupsService } from '../../core/permissions/user-groups-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, type ApiOperation } from '../openapi/operation.js';

const ADMINS_ONLY =
  'Administrators only. Needs database user tables with [api] group_details_table (else 400 ERR_GROUP_PERMISSIONS_OFF).';

const OPERATIONS = {
  list: {
    tag: 'user-groups',
    summary:
      'List user groups with their permissions: every group with a row or a member, and Administrators',
    description: ADMINS_ONLY,
    access: 'administrators',
    responses: [list(userGroupSchema)],
  },
  get: {
    tag: 'user-groups',
    summary: 'One user group; a group without a row grants nothing',
    description: ADMINS_ONLY,
    access: 'administrators',
    responses: [data(userGroupSchema)],
  },
  update: {
    tag: 'user-groups',
    summary: "Set a user group's permissions (the whole set) and restrictions",
    description: `${ADMINS_ONLY} A permission left out of \`permissions\` is not granted; an absent field keeps what is stored. Administrators cannot be changed.`,
    access: 'administrators',
    body: updateUserGroupBodySchema,
    responses: [data(userGroupSchema)],
  },
  delete: {
    tag: 'user-groups',
    summary: "Delete a user group: its row and every user's membership",
    description: `${ADMINS_ONLY} Administrators cannot be deleted.`,
    access: 'administrators',
    responses: [empty(204, 'Deleted (also when there was nothing to delete)')],
  },
} satisfies Record<string, ApiOperation>;

type Named = { Params: { name: string } };

/** GET /user-groups, GET/PUT/DELETE /user-groups/{name} in OpenRPort's shape (issue 28 §1). */
export function userGroupRoutes(app: FastifyInstance, groups: UserGroupsService): void {
  app.get('/user-groups', documented(OPERATIONS.list), async (request) => {
    const all = await groups.list(callerOf(request).user);
    return { data: all, meta: { count: all.length } };
  });

  app.get<Named>('/user-groups/:name', documented(OPERATIONS.get), async (request) => ({
    data: await groups.get(callerOf(request).user, normalizeName(request.params.name)),
  }));

  app.put<Named>('/user-groups/:name', documented(OPERATIONS.update), async (request) => {
    const caller = callerOf(request).user;
    const body = parseBody(updateUserGroupBodySchema, request.body);
    return { data: await groups.update(caller, normalizeName(request.params.name), body) };
  });

  app.delete<Named>('/user-groups/:name', documented(OPERATIONS.delete), async (request, reply) => {
    await groups.delete(callerOf(request).user, normalizeName(request.params.name));
    return reply.status(204).send();
  });
}
