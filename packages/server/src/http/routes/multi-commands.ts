import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  JOB_STATUSES,
  jobCreatedSchema,
  jobSchema,
  multiCommandBodySchema,
  multiJobSchema,
  multiJobSummarySchema,
  multiLibraryScriptRunBodySchema,
  multiScriptBodySchema,
  parseListQuery,
  pickFields,
  rerunSelectionSchema,
  runCancelledSchema,
  RUN_CSV_COLUMNS,
} from '@svc/protocol';
import { z } from 'zod';
import { MULTI_JOB_CHILDREN, MULTI_JOB_ITEM, MULTI_JOB_LIST } from '../../core/jobs/multi-job-list.js';
import type { MultiJobsService } from '../../core/jobs/multi-jobs-service.js';
import type { LibraryService } from '../../core/library/library-service.js';
import { accessOf } from '../access.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { wantsCsv, sendCsv, rerunSelection } from '../run-records.js';
import { parseScriptRequest } from '../script-request.js';
import { data, dataWithMeta, documented, list, sparse, type ApiOperation } from '../openapi/operation.js';

type Query = Record<string, unknown>;

/** Fields of a multi-client job that are read only when asked for (a run on many clients makes them big). */
const TARGETING = ['client_ids', 'group_ids', 'tags', 'labels'];

const STARTED = 'Started; follow it with GET /commands/{jid} or live on /ws/commands';
const MULTI_ENV_NOTE =
  '`env` sets environment variables of every process: plain strings, or `{"vault": "<key>"}` for the value of ' +
  'the shared vault entry (empty client_id) with that key, resolved once at dispatch with your rights ' +
  '(required_group applies; 409 ERR_VAULT_LOCKED, 403, 404 before anything runs). The value never reaches a ' +
  'command line or script file, and is replaced by `[redacted:<key>]` wherever it appears in the output. Not ' +
  'with `queue_ttl`; a client whose agent is too old for `env` gets a failed job saying so.';
const statusCounts = z.object(Object.fromEntries(JOB_STATUSES.map((s) => [s, z.number().int()])));

const OPERATIONS = {
  command: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'Run a command on many clients',
    description:
      MULTI_ENV_NOTE +
      ' batch_size (a count or "N%") runs it batch by batch, batch_delay apart; once max_failures of its jobs ' +
      'failed (or ended unknown) the clients not started end `skipped`. batch_delay and max_failures need ' +
      'batch_size. POST /scripts takes the same.',
    body: multiCommandBodySchema,
    responses: [data(jobCreatedSchema, 200, STARTED)],
  },
  script: {
    permission: 'scripts',
    tag: 'multi-client commands',
    summary: 'Run a script (base64) or a library script (script_id) on many clients',
    description:
      'Send either `script` (base64) or `script_id` (a library script, run with its stored interpreter, is_sudo, ' +
      'cwd and timeout_sec unless the request gives them). ' +
      MULTI_ENV_NOTE,
    body: z.union([multiScriptBodySchema, multiLibraryScriptRunBodySchema]),
    responses: [data(jobCreatedSchema, 200, STARTED)],
  },
  list: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'List multi-client jobs',
    list: MULTI_JOB_LIST,
    responses: [list(sparse(multiJobSummarySchema))],
  },
  get: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'One multi-client job with its jobs; meta.jobs counts them by status',
    description:
      'A staged run (batch_size) has `rollout`: batches done and total, when the next batch starts, its ' +
      'failures so far and why it stopped early (null otherwise). ' +
      'With `Accept: text/csv` the run is exported as CSV instead (one row per client, columns ' +
      `${RUN_CSV_COLUMNS.join(', ')}; streamed, so it suits runs on thousands of clients).`,
    list: MULTI_JOB_ITEM,
    responses: [
      dataWithMeta(sparse(multiJobSchema), z.object({ jobs: statusCounts })),
      { status: 200, description: 'The run as CSV', body: z.string(), contentType: 'text/csv' },
    ],
  },
  rerun: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'Run a multi-client job again on its failed clients (or all), with the same options',
    description:
      'only=failed (default): the clients whose job failed, ended unknown or was skipped by a staged run; ' +
      'only=all: every client the run has a job for. Every option of the run is kept (queue_ttl, timeout_kill, ' +
      'batch_size, batch_delay, max_failures included), and the vault references of its env, resolved again ' +
      'for the caller (their required_group applies; a locked vault is 409 before anything runs). Clients removed ' +
      'since are left out. 409 ERR_NOTHING_TO_RERUN when no client is left; 409 ERR_RERUN_ENV_NOT_KEPT when ' +
      'its env had plain values (svcd does not keep them).',
    query: [{ name: 'only', description: 'failed (default) or all', schema: rerunSelectionSchema }],
    responses: [data(jobCreatedSchema, 200, STARTED)],
  },
  cancel: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'Cancel a multi-client job: every child not finished',
    description:
      'Stops dispatching (clients not reached yet get a `cancelled` job), cancels queued children at once and ' +
      'asks the agents of running children to kill them (process group; they end `cancelled` with the output ' +
      'so far). The run then ends `cancelled`. 409 ERR_JOB_ENDED when nothing was left to cancel.',
    responses: [data(runCancelledSchema, 202, 'Cancelled; running children are being killed')],
  },
  children: {
    permission: 'commands',
    tag: 'multi-client commands',
    summary: 'The jobs of one multi-client job, page by page, with the list grammar',
    list: MULTI_JOB_CHILDREN,
    responses: [list(sparse(jobSchema))],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.5 and 4.6 for many clients: start a multi-client command or script, read it, list them. */
export function multiCommandRoutes(
  app: FastifyInstance,
  multi: MultiJobsService,
  library: LibraryService,
): void {
  /** A run with a target outside the caller's client scope is answered as unknown (404). */
  const visible = async (request: FastifyRequest<{ Params: { jid: string } }>) =>
    multi.assertVisible(request.params.jid, (await accessOf(request)).scope);

  app.post('/commands', documented(OPERATIONS.command), async (request) => {
    const body = parseBody(multiCommandBodySchema, request.body);
    const { user } = callerOf(request);
    const access = await accessOf(request);
    const { jid } = await multi.runCommand(body, user.username, undefined, {
      requester: user,
      check: (run) => access.assertRun(run),
    });
    return { data: { jid } };
  });

  multiScriptRoute(app, multi, library);

  app.get('/commands', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, MULTI_JOB_LIST);
    const { data, count } = await multi.list(query, (await accessOf(request)).scope);
    return { data: data.map((job) => pickFields(job, query.fields)), meta: { count } };
  });

  // meta.jobs counts the children by status; with fields[commands] leaving out `jobs` only that count is read,
  // and leaving out the targeting fields skips those too.
  app.get<{ Params: { jid: string } }>(
    '/commands/:jid',
    documented(OPERATIONS.get),
    async (request, reply) => {
      await visible(request);
      if (wantsCsv(request))
        return sendCsv(reply, request.params.jid, await multi.exportCsv(request.params.jid));
      const { fields } = parseListQuery(request.query as Query, MULTI_JOB_ITEM);
      const wants = (field: string) => fields === undefined || fields.includes(field);
      const withTargets = TARGETING.some(wants);
      const { job, counts } = await multi.get(request.params.jid, wants('jobs'), withTargets);
      return { data: pickFields(job, fields), meta: { jobs: counts } };
    },
  );

  app.delete<{ Params: { jid: string } }>(
    '/commands/:jid',
    documented(OPERATIONS.cancel),
    async (request, reply) => {
      await visible(request);
      return reply.code(202).send({ data: await multi.cancel(request.params.jid) });
    },
  );

  app.post<{ Params: { jid: string } }>(
    '/commands/:jid/rerun',
    documented(OPERATIONS.rerun),
    async (request) => {
      const only = rerunSelection(request.query);
      await visible(request);
      const { user } = callerOf(request);
      const access = await accessOf(request);
      // The run's vault references are resolved for the user asking for the rerun.
      const { jid } = await multi.rerun(request.params.jid, only, user.username, {
        requester: user,
        check: (run) => access.assertRun(run),
      });
      return { data: { jid } };
    },
  );

  app.get<{ Params: { jid: string } }>(
    '/commands/:jid/jobs',
    documented(OPERATIONS.children),
    async (request) => {
      const query = parseListQuery(request.query as Query, MULTI_JOB_CHILDREN);
      await visible(request);
      const { data, count } = await multi.children(request.params.jid, query);
      return { data: data.map((job) => pickFields(job, query.fields)), meta: { count } };
    },
  );
}

/** POST /scripts; also mounted at the unversioned /api/scripts that the spec's example shows. */
export function multiScriptRoute(
  app: FastifyInstance,
  multi: MultiJobsService,
  library: LibraryService,
): void {
  const bodies = { inline: multiScriptBodySchema, byId: multiLibraryScriptRunBodySchema };
  app.post('/scripts', documented(OPERATIONS.script), async (request) => {
    const body = await parseScriptRequest(request.body, bodies, library);
    const { user } = callerOf(request);
    const access = await accessOf(request);
    const { jid } = await multi.runScript(body, user.username, undefined, {
      requester: user,
      check: (run) => access.assertRun(run),
    });
    return { data: { jid } };
  });
}
