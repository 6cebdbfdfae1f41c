import type { FastifyInstance } from 'fastify';
import {
  commandBodySchema,
  jobCancelledSchema,
  jobCreatedSchema,
  jobSchema,
  libraryScriptRunBodySchema,
  parseListQuery,
  pickFields,
  scriptBodySchema,
} from '@svc/protocol';
import { JOB_ITEM, JOB_LIST } from '../../core/jobs/job-list.js';
import type { JobsService } from '../../core/jobs/jobs-service.js';
import type { LibraryService } from '../../core/library/library-service.js';
import { accessOf, scriptText } from '../access.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { parseScriptRequest } from '../script-request.js';
import { data, documented, list, sparse, type ApiOperation } from '../openapi/operation.js';
import { z } from 'zod';

const SCRIPT_BODIES = { inline: scriptBodySchema, byId: libraryScriptRunBodySchema };

type Query = Record<string, unknown>;
type ClientParams = { Params: { id: string } };
type JobParams = { Params: { id: string; jid: string } };

export const ENV_NOTE =
  '`env` sets environment variables of the process: `{"MODE": "fast", "DB_PASS": {"vault": "db-prod"}}`. A ' +
  "vault reference is resolved at dispatch with your rights (the entry's required_group applies; for a run on " +
  "one client that client's entry with the key, else the shared one) and never reaches the command line or the " +
  'script file; every occurrence of its value in the output is replaced by `[redacted:<key>]`. 409 ' +
  'ERR_VAULT_LOCKED, 403 ERR_VAULT_GROUP_REQUIRED or 404 ERR_VAULT_ENTRY_NOT_FOUND before anything runs. Not ' +
  'with `queue_ttl`. An agent too old for `env` gets no job: its job fails saying so.';

const QUEUE_NOTE =
  'With `queue_ttl` (e.g. `15m`) a client that is not connected gets the job `queued`; it runs when the client ' +
  'connects within the TTL, else it ends `expired`. `timeout_kill: true` kills the process group when timeout_sec ' +
  'passes, reporting `failed`, instead of reporting `unknown` and leaving it running. ' +
  ENV_NOTE;

const OPERATIONS = {
  command: {
    permission: 'commands',
    tag: 'commands',
    summary: 'Run a command on a client',
    description: QUEUE_NOTE,
    body: commandBodySchema,
    responses: [data(jobCreatedSchema, 200, 'Started; follow it with GET /clients/{id}/commands/{jid}')],
  },
  script: {
    permission: 'scripts',
    tag: 'commands',
    summary: 'Run a script (base64) or a library script (script_id) on a client',
    description:
      'Send either `script` (base64) or `script_id` (a library script, run with its stored interpreter, is_sudo, ' +
      'cwd and timeout_sec unless the request gives them). ' +
      QUEUE_NOTE,
    body: z.union([scriptBodySchema, libraryScriptRunBodySchema]),
    responses: [data(jobCreatedSchema, 200, 'Started; follow it with GET /clients/{id}/commands/{jid}')],
  },
  list: {
    permission: 'commands',
    tag: 'commands',
    summary: "List a client's jobs",
    list: JOB_LIST,
    responses: [list(sparse(jobSchema))],
  },
  get: {
    permission: 'commands',
    tag: 'commands',
    summary: 'One job of a client',
    list: JOB_ITEM,
    responses: [data(sparse(jobSchema))],
  },
  cancel: {
    permission: 'commands',
    tag: 'commands',
    summary: 'Cancel a queued or running job of a client',
    description:
      'A queued job ends `cancelled` immediately (answer status `cancelled`). A running job is killed by its agent: SIGTERM ' +
      'to its whole process group, SIGKILL after 5 s; the job then ends `cancelled` with the output so far ' +
      '(status `cancelling` here; follow it with GET). 409 ERR_JOB_ENDED for a job that has ended, ' +
      'ERR_JOB_NOT_CANCELLABLE when its agent is not connected or too old to cancel.',
    responses: [data(jobCancelledSchema, 202, 'Cancelled, or being killed by the agent')],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.5 and 4.6 for one client: run a command or a script, read its job, list the client's jobs; cancel one. */
export function commandRoutes(app: FastifyInstance, jobs: JobsService, library: LibraryService): void {
  app.post<ClientParams>('/clients/:id/commands', documented(OPERATIONS.command), async (request) => {
    const body = parseBody(commandBodySchema, request.body);
    const { user } = callerOf(request);
    (await accessOf(request)).assertCommandOn(request.params.id, body.command);
    return { data: await jobs.runCommand(request.params.id, body, user.username, user) };
  });

  app.post<ClientParams>('/clients/:id/scripts', documented(OPERATIONS.script), async (request) => {
    const body = await parseScriptRequest(request.body, SCRIPT_BODIES, library);
    const { user } = callerOf(request);
    (await accessOf(request)).assertScriptOn(request.params.id, scriptText(body.script));
    return { data: await jobs.runScript(request.params.id, body, user.username, user) };
  });

  app.get<ClientParams>('/clients/:id/commands', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Query, JOB_LIST);
    (await accessOf(request)).assertClient(request.params.id);
    const { data, count } = await jobs.list(request.params.id, query);
    return { data: data.map((job) => pickFields(job, query.fields)), meta: { count } };
  });

  app.get<JobParams>('/clients/:id/commands/:jid', documented(OPERATIONS.get), async (request) => {
    const { fields } = parseListQuery(request.query as Query, JOB_ITEM);
    (await accessOf(request)).assertClient(request.params.id);
    return { data: pickFields(await jobs.get(request.params.id, request.params.jid), fields) };
  });

  app.delete<JobParams>(
    '/clients/:id/commands/:jid',
    documented(OPERATIONS.cancel),
    async (request, reply) => {
      (await accessOf(request)).assertClient(request.params.id);
      const cancelled = await jobs.cancel(request.params.id, request.params.jid);
      return reply.code(202).send({ data: cancelled });
    },
  );
}
