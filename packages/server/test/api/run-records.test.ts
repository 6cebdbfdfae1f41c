/**
 * Run records for people (issue 27 §7): a multi-client run exported as CSV (Accept: text/csv) and run again on
 * its failed clients (POST /commands/{jid}/rerun), against a real svcd with agents speaking the real link.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AUTH, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { startJobAgent, succeed, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const UNKNOWN_RUN = '00000000-0000-4000-8000-000000000000';

/** A minimal RFC 4180 reader, enough to check what the export wrote. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i += 1;
    } else if (quoted && c === '"') quoted = false;
    else if (quoted) cell += c;
    else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i += 1;
    } else cell += c;
  }
  return rows;
}

describe('run records: CSV export and rerun', () => {
  let t: GatewayServer;
  let agents: JobAgent[];
  let readToken = '';

  beforeAll(async () => {
    t = await startGatewayServer({ server: { auth_write: true } });
    agents = [
      await startJobAgent(t, 'rr-1', { tags: ['rr'] }),
      await startJobAgent(t, 'rr-2', { tags: ['rr'] }),
      await startJobAgent(t, 'rr-3', { tags: ['rr'] }),
    ];
    const token = await t.api.post('/me/tokens', { name: 'read only', scope: 'read' }, { auth: AUTH });
    expect(token.status).toBe(201);
    readToken = token.json.data.token as string;
  });
  afterAll(async () => {
    for (const a of agents ?? []) await a.agent.close();
    await t?.stop();
  });

  const finished = (jid: string, children: number): Promise<Json> =>
    waitFor(
      async (): Promise<Json> => {
        const res = await t.api.get(`/commands/${jid}`, { auth: AUTH });
        const job = res.json.data as { status: string; jobs: unknown[] };
        return job.status !== 'running' && job.jobs.length === children ? job : undefined;
      },
      10_000,
      `run ${jid} to finish`,
    );

  const resetAgents = () => {
    for (const a of agents) {
      a.runs.length = 0;
      a.behaviour = succeed;
    }
  };

  /** A concurrent run where rr-2 fails with tricky output and the others succeed. */
  async function runWithOneFailure(): Promise<string> {
    for (const a of agents) a.behaviour = succeed;
    const failing = agents[1];
    if (!failing) throw new Error('no agent');
    failing.behaviour = () => ({
      result: {
        stdout: Buffer.from('=SUM(1,2) "quoted"\nline two, with comma\n'),
        stderr: Buffer.from('boom\n'),
        end: { status: 'failed', exit_code: 3 },
      },
    });
    const res = await t.api.post(
      '/commands',
      {
        command: '/usr/bin/true',
        client_ids: ['rr-1', 'rr-2', 'rr-3'],
        execute_concurrently: true,
        cwd: '/tmp',
        timeout_sec: 9,
      },
      { auth: AUTH },
    );
    expect(res.status).toBe(200);
    const jid = res.json.data.jid as string;
    await finished(jid, 3);
    return jid;
  }

  const csvOf = (jid: string, auth: object = { auth: AUTH }) =>
    fetch(`${t.server.apiUrl}/commands/${jid}`, {
      headers: { accept: 'text/csv', ...headersOf(auth) },
    });
  const headersOf = (auth: Json): Record<string, string> =>
    auth.auth ? { authorization: `Basic ${Buffer.from(auth.auth.basic.join(':')).toString('base64')}` } : {};

  test('Accept: text/csv exports one row per client, quoted, formulas defused, as a download', async () => {
    const jid = await runWithOneFailure();
    const res = await csvOf(jid);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="run-${jid}.csv"`);
    const rows = parseCsv(await res.text());
    expect(rows[0]).toEqual([
      'client_id',
      'client_name',
      'status',
      'exit_code',
      'started_at',
      'finished_at',
      'duration_sec',
      'error',
      'stdout',
      'stderr',
    ]);
    expect(rows).toHaveLength(4);
    const byClient = Object.fromEntries(rows.slice(1).map((r) => [r[0], r]));
    expect(byClient['rr-2']?.slice(0, 4)).toEqual(['rr-2', 'Name rr-2', 'failed', '3']);
    // The stdout starts with '=': a spreadsheet must not take it for a formula.
    expect(byClient['rr-2']?.[8]).toBe(`'=SUM(1,2) "quoted"\nline two, with comma\n`);
    expect(byClient['rr-2']?.[9]).toBe('boom\n');
    expect(byClient['rr-1']?.[2]).toBe('successful');
    expect(byClient['rr-1']?.[8]).toBe('rr-1 ran /usr/bin/true\n');
    expect(Number(byClient['rr-1']?.[6])).toBeGreaterThanOrEqual(0);
    // Without Accept: text/csv it stays JSON.
    const json = await t.api.get(`/commands/${jid}`, { auth: AUTH });
    expect(json.json.meta.jobs).toMatchObject({ failed: 1, successful: 2 });
  });

  test('the CSV export: 401 without credentials, 404 for an unknown run (as JSON)', async () => {
    expect((await csvOf(UNKNOWN_RUN, {})).status).toBe(401);
    const missing = await csvOf(UNKNOWN_RUN);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await missing.json()) as Json).errors[0].code).toBe('ERR_MULTI_JOB_NOT_FOUND');
  });

  test('rerun?only=failed starts a new run on the failed clients with the same options', async () => {
    const jid = await runWithOneFailure();
    resetAgents();
    const res = await t.api.post(`/commands/${jid}/rerun?only=failed`, undefined, { auth: AUTH });
    expect(res.status).toBe(200);
    const again = res.json.data.jid as string;
    expect(again).not.toBe(jid);
    const run = await finished(again, 1);
    expect(run).toMatchObject({
      command: '/usr/bin/true',
      cwd: '/tmp',
      timeout_sec: 9,
      concurrent: true,
      client_ids: ['rr-2'],
      status: 'successful',
    });
    expect(agents.map((a) => a.runs.length)).toEqual([0, 1, 0]);

    // Nothing failed in the new run: 409 with a clear message; only=all takes every client.
    const nothing = await t.api.post(`/commands/${again}/rerun`, undefined, { auth: AUTH });
    expect(nothing.status).toBe(409);
    expect(nothing.json.errors[0]).toMatchObject({ code: 'ERR_NOTHING_TO_RERUN' });
    expect(nothing.json.errors[0].title).toContain('Nothing failed');
    const all = await t.api.post(`/commands/${jid}/rerun?only=all`, undefined, { auth: AUTH });
    expect(all.status).toBe(200);
    expect((await finished(all.json.data.jid as string, 3)).client_ids).toEqual(['rr-1', 'rr-2', 'rr-3']);
  });

  test('a script run runs again as the same script', async () => {
    resetAgents();
    agents[0]!.behaviour = () => ({ result: { end: { status: 'failed', exit_code: 1 } } });
    const script = '#!/bin/sh\necho "héllo"\n';
    const res = await t.api.post(
      '/scripts',
      {
        script: Buffer.from(script).toString('base64'),
        tags: { tags: ['rr'] },
        interpreter: 'sh',
        execute_concurrently: true,
      },
      { auth: AUTH },
    );
    const jid = res.json.data.jid as string;
    await finished(jid, 3);
    agents[0]!.runs.length = 0;
    agents[0]!.behaviour = succeed;
    const again = await t.api.post(`/commands/${jid}/rerun`, undefined, { auth: AUTH });
    expect(again.status).toBe(200);
    const run = await finished(again.json.data.jid as string, 1);
    expect(run).toMatchObject({ is_script: true, command: script, interpreter: 'sh', client_ids: ['rr-1'] });
    expect(Buffer.from(agents[0]!.runs[0]?.script ?? '', 'base64').toString()).toBe(script);
  });

  test('rerun: 401 without credentials, 403 for a read-only token, 404 unknown run, 400 bad only', async () => {
    const unauth = await t.api.post(`/commands/${UNKNOWN_RUN}/rerun`, undefined);
    expect(unauth.status).toBe(401);
    const read = await t.api.post(`/commands/${UNKNOWN_RUN}/rerun`, undefined, {
      auth: { basic: [AUTH.basic[0], readToken] },
    });
    expect(read.status).toBe(403);
    const missing = await t.api.post(`/commands/${UNKNOWN_RUN}/rerun`, undefined, { auth: AUTH });
    expect(missing.status).toBe(404);
    expect(missing.json.errors[0].code).toBe('ERR_MULTI_JOB_NOT_FOUND');
    const jid = await runWithOneFailure();
    const bad = await t.api.post(`/commands/${jid}/rerun?only=some`, undefined, { auth: AUTH });
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0].title).toBe('only must be failed or all');
  });
});
