import type { FastifyInstance } from 'fastify';
import { commandBodySchema, parseListQuery, pickFields, scriptBodySchema } from '@svc/protocol';
import { JOB_ITEM, JOB_LIST } from '../../core/jobs/job-list.js';
import type { JobsService } from '../../core/jobs/jobs-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

type Query = Record<string, unknown>;
type ClientParams = { Params: { id: string } };
type JobParams = { Params: { id: string; jid: string } };

/** Spec 4.5 and 4.6 for one client: run a command or a script, read its job, list the client's jobs. */
export function commandRoutes(app: FastifyInstance, jobs: JobsService): void {
  app.post<ClientParams>('/clients/:id/commands', async (request) => {
    const body = parseBody(commandBodySchema, request.body);
    return { data: await jobs.runCommand(request.params.id, body, callerOf(request).user.username) };
  });

  app.post<ClientParams>('/clients/:id/scripts', async (request) => {
    const body = parseBody(scriptBodySchema, request.body);
    return { data: await jobs.runScript(request.params.id, body, callerOf(request).user.username) };
  });

  app.get<ClientParams>('/clients/:id/commands', async (request) => {
    const query = parseListQuery(request.query as Query, JOB_LIST);
    const { data, count } = await jobs.list(request.params.id, query);
    return { data: data.map((job) => pickFields(job, query.fields)), meta: { count } };
  });

  app.get<JobParams>('/clients/:id/commands/:jid', async (request) => {
    const { fields } = parseListQuery(request.query as Query, JOB_ITEM);
    return { data: pickFields(await jobs.get(request.params.id, request.params.jid), fields) };
  });
}
