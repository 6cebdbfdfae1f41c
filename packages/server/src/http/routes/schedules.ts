import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  firingCountsSchema,
  parseListQuery,
  pickFields,
  scheduleBodySchema,
  scheduleFiringSchema,
  scheduleSchema,
} from '@svc/protocol';
import { z } from 'zod';
import { SCHEDULE_ITEM, SCHEDULE_LIST } from '../../core/schedules/schedule-list.js';
import type { ScheduleViewer } from '../../core/schedules/schedule-scope.js';
import type { SchedulesService } from '../../core/schedules/schedules-service.js';
import { accessOf } from '../access.js';
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

type Query = Record<string, unknown>;
type ScheduleParams = { Params: { id: string } };

const BODY_HELP =
  '`schedule` is a cron expression (minute hour day-of-month month day-of-week) read in `timezone` (IANA, default ' +
  'UTC). `type` command takes `command`; type script takes `script` (base64) or `script_id` (a library script, ' +
  'read at each firing). Targets: `client_ids` and/or `group_ids`, or `tags`, or `labels`, resolved at each firing.';

const OPERATIONS = {
  create: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'Create a schedule',
    description: BODY_HELP,
    body: scheduleBodySchema,
    responses: [data(scheduleSchema, 201, 'Created')],
  },
  list: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'List schedules',
    list: SCHEDULE_LIST,
    responses: [list(sparse(scheduleSchema))],
  },
  get: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'One schedule with its next firing and last execution',
    list: SCHEDULE_ITEM,
    responses: [data(sparse(scheduleSchema))],
  },
  replace: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'Replace a schedule',
    description: BODY_HELP,
    body: scheduleBodySchema,
    responses: [data(scheduleSchema)],
  },
  delete: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'Delete a schedule (its runs stay)',
    responses: [empty(204, 'Deleted')],
  },
  runs: {
    permission: 'scheduler',
    tag: 'schedules',
    summary: 'The last 50 firings of a schedule with their runs; meta.outcomes counts every firing',
    responses: [
      dataWithMeta(
        z.array(scheduleFiringSchema),
        z.object({ count: z.number().int(), outcomes: firingCountsSchema }),
      ),
    ],
  },
} satisfies Record<string, ApiOperation>;

/** The caller as the schedules service checks their client scope. */
const viewerOf = async (request: FastifyRequest): Promise<ScheduleViewer> => ({
  username: callerOf(request).user.username,
  scope: (await accessOf(request)).scope,
});

/** OpenRPort's /schedules, for those with the scheduler permission; a client scope limits what they see. */
export function scheduleRoutes(app: FastifyInstance, schedules: SchedulesService): void {
  app.post('/schedules', documented(OPERATIONS.create), async (request, reply) => {
    const body = parseBody(scheduleBodySchema, request.body);
    const viewer = await viewerOf(request);
    const data = await schedules.create(body, viewer.username, viewer);
    return reply.status(201).send({ data });
  });

  app.get('/schedules', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, SCHEDULE_LIST);
    const { data, count } = await schedules.list(query, await viewerOf(request));
    return { data: data.map((s) => pickFields(s, query.fields)), meta: { count } };
  });

  app.get<ScheduleParams>('/schedules/:id', documented(OPERATIONS.get), async (request) => {
    const { fields } = parseListQuery(request.query as Query, SCHEDULE_ITEM);
    return { data: pickFields(await schedules.get(request.params.id, await viewerOf(request)), fields) };
  });

  app.put<ScheduleParams>('/schedules/:id', documented(OPERATIONS.replace), async (request) => {
    const body = parseBody(scheduleBodySchema, request.body);
    const viewer = await viewerOf(request);
    return { data: await schedules.replace(request.params.id, body, viewer.username, viewer) };
  });

  app.delete<ScheduleParams>('/schedules/:id', documented(OPERATIONS.delete), async (request, reply) => {
    await schedules.delete(request.params.id, await viewerOf(request));
    return reply.status(204).send();
  });

  app.get<ScheduleParams>('/schedules/:id/runs', documented(OPERATIONS.runs), async (request) => {
    const { data, outcomes } = await schedules.firings(request.params.id, await viewerOf(request));
    const count = Object.values(outcomes).reduce((a, b) => a + b, 0);
    return { data, meta: { count, outcomes } };
  });
}
