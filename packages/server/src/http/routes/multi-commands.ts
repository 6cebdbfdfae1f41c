import type { FastifyInstance } from 'fastify';
import { multiCommandBodySchema, multiScriptBodySchema, parseListQuery, pickFields } from '@svc/protocol';
import { MULTI_JOB_ITEM, MULTI_JOB_LIST } from '../../core/jobs/multi-job-list.js';
import type { MultiJobsService } from '../../core/jobs/multi-jobs-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

type Query = Record<string, unknown>;

/** Spec 4.5 and 4.6 for many clients: start a multi-client command or script, read it, list them. */
export function multiCommandRoutes(app: FastifyInstance, multi: MultiJobsService): void {
  app.post('/commands', async (request) => {
    const body = parseBody(multiCommandBodySchema, request.body);
    const { jid } = await multi.runCommand(body, callerOf(request).user.username);
    return { data: { jid } };
  });

  multiScriptRoute(app, multi);

  app.get('/commands', async (request) => {
    const query = parseListQuery(request.query as Query, MULTI_JOB_LIST);
    const { data, count } = await multi.list(query);
    return { data: data.map((job) => pickFields(job, query.fields)), meta: { count } };
  });

  // meta.jobs counts the children by status; with fields[commands] leaving out `jobs` only that count is read.
  app.get<{ Params: { jid: string } }>('/commands/:jid', async (request) => {
    const { fields } = parseListQuery(request.query as Query, MULTI_JOB_ITEM);
    const withJobs = fields === undefined || fields.includes('jobs');
    const { job, counts } = await multi.get(request.params.jid, withJobs);
    return { data: pickFields(job, fields), meta: { jobs: counts } };
  });
}

/** POST /scripts; also mounted at the unversioned /api/scripts that the spec's example shows. */
export function multiScriptRoute(app: FastifyInstance, multi: MultiJobsService): void {
  app.post('/scripts', async (request) => {
    const body = parseBody(multiScriptBodySchema, request.body);
    const { jid } = await multi.runScript(body, callerOf(request).user.username);
    return { data: { jid } };
  });
}
