/**
 * Issue 27: a rerun of a run with `env` vault references starts with the same references, resolved again at
 * dispatch for the user who asks for the rerun (required_group, a locked vault); the run record keeps the
 * references only, and a run with plain env values is not rerun (svcd does not keep them).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { JOB_ENV_CAPABILITY } from '../../../protocol/src/index.js';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { waitFor } from '../gateway/helpers.js';
import { agentsOf, startJobAgent, type Behaviour, type JobAgent } from './job-agents.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
type Json = any;

const asAdmin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
const asOperator = { auth: { basic: [OPERATOR.username, OPERATOR.password] as [string, string] } };
/** A user in the group the vault entry requires (administrators are not, unless they are in it). */
const KEEPER = { username: 'keeper', password: 'keeper-secret-1', groups: ['Operators', 'secret-team'] };
const asKeeper = { auth: { basic: [KEEPER.username, KEEPER.password] as [string, string] } };
const FIRST = 'first-secret-value-1';
const SECOND = 'second-secret-value-2';
const fails: Behaviour = () => ({ result: { end: { status: 'failed', exit_code: 1 } } });

describe('rerun of a run with vault references in env', () => {
  let t: TestServer;
  let agents: JobAgent[] = [];
  let entryId = 0;

  const gateway = () => agentsOf(t);

  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      users: [ADMIN, OPERATOR, KEEPER],
      clientAuth: { source: 'file', entries: { 'agents-a': 'secret-a-123' } },
    });
    agents = [
      await startJobAgent(gateway(), 'env-1', { capabilities: [JOB_ENV_CAPABILITY] }),
      await startJobAgent(gateway(), 'env-2', { capabilities: [JOB_ENV_CAPABILITY] }),
    ];
    expect((await t.api.post('/vault-admin/init', { password: 'vault-pw-1' }, asAdmin)).status).toBe(201);
    const team = await t.api.post(
      '/vault',
      { key: 'team-db', value: FIRST, type: 'secret', required_group: 'secret-team' },
      asAdmin,
    );
    expect(team.status, team.text).toBe(201);
    entryId = team.json.data.id;
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.close();
    await t?.stop();
  });

  const runOf = (jid: string) =>
    waitFor(
      async (): Promise<Json> => {
        const run = (await t.api.get(`/commands/${jid}`, asAdmin)).json.data;
        return run.status !== 'running' && run;
      },
      15_000,
      `run ${jid} to end`,
    );
  const runCount = async () => (await t.api.get('/commands', asAdmin)).json.meta.count as number;
  const received = () => agents.reduce((n, a) => n + a.runs.length, 0);

  test('the rerun carries the references, resolved again for the caller; the record keeps no value', async () => {
    agents[0]!.behaviour = fails;
    agents[1]!.behaviour = () => ({ result: {} });
    const started = await t.api.post(
      '/commands',
      {
        command: 'deploy',
        client_ids: ['env-1', 'env-2'],
        execute_concurrently: true,
        env: { DB_PASS: { vault: 'team-db' } },
      },
      asKeeper,
    );
    expect(started.status, started.text).toBe(200);
    const first = await runOf(started.json.data.jid);
    expect(first.status).toBe('failed');
    expect(first.env).toEqual({ DB_PASS: { vault: 'team-db' } });
    expect(first.env_plain).toBeUndefined();
    expect(JSON.stringify(first)).not.toContain(FIRST);
    expect(agents[0]!.runs.at(-1)?.env).toEqual({ DB_PASS: FIRST });

    // The entry changes: the rerun gets the value at its own dispatch, not a copy of the first.
    const changed = await t.api.put(
      `/vault/${entryId}`,
      { key: 'team-db', value: SECOND, type: 'secret', required_group: 'secret-team' },
      asKeeper,
    );
    expect(changed.status, changed.text).toBe(200);
    agents[0]!.behaviour = () => ({ result: {} });
    const before = agents[1]!.runs.length;
    const rerun = await t.api.post(
      `/commands/${started.json.data.jid}/rerun?only=failed`,
      undefined,
      asKeeper,
    );
    expect(rerun.status, rerun.text).toBe(200);
    const second = await runOf(rerun.json.data.jid);
    expect(second).toMatchObject({ status: 'successful', client_ids: ['env-1'] });
    expect(second.env).toEqual({ DB_PASS: { vault: 'team-db' } });
    expect(JSON.stringify(second)).not.toContain(SECOND);
    expect(agents[0]!.runs.at(-1)).toMatchObject({
      command: 'deploy',
      env: { DB_PASS: SECOND },
      redact: { DB_PASS: 'team-db' },
    });
    expect(agents[1]!.runs.length).toBe(before);

    // Another user's rerun: the entry's required_group applies to them (an operator outside the group), before
    // anything is created.
    const runs = await runCount();
    const sent = received();
    const refused = await t.api.post(
      `/commands/${started.json.data.jid}/rerun?only=all`,
      undefined,
      asOperator,
    );
    expect(refused.status, refused.text).toBe(403);
    expect(refused.json.errors[0]).toMatchObject({ code: 'ERR_VAULT_GROUP_REQUIRED' });
    expect(refused.text).not.toContain(SECOND);
    expect([await runCount(), received()]).toEqual([runs, sent]);

    // A locked vault: the same clear 409 as a new run, nothing runs.
    expect((await t.api.delete('/vault-admin/sesame', asAdmin)).status).toBe(204);
    const locked = await t.api.post(`/commands/${started.json.data.jid}/rerun?only=all`, undefined, asKeeper);
    expect(locked.status, locked.text).toBe(409);
    expect(locked.json.errors[0]).toMatchObject({ code: 'ERR_VAULT_LOCKED' });
    expect([await runCount(), received()]).toEqual([runs, sent]);
    expect((await t.api.post('/vault-admin/sesame', { password: 'vault-pw-1' }, asAdmin)).status).toBe(201);
  });

  test('a run with plain env values keeps their names only and is not rerun', async () => {
    agents[0]!.behaviour = fails;
    const started = await t.api.post(
      '/commands',
      {
        command: 'migrate',
        client_ids: ['env-1'],
        env: { MODE: 'plain-value-not-kept', DB_PASS: { vault: 'team-db' } },
      },
      asKeeper,
    );
    expect(started.status, started.text).toBe(200);
    const run = await runOf(started.json.data.jid);
    expect(run).toMatchObject({ env: { DB_PASS: { vault: 'team-db' } }, env_plain: ['MODE'] });
    expect(JSON.stringify(run)).not.toContain('plain-value-not-kept');
    const runs = await runCount();
    const refused = await t.api.post(`/commands/${started.json.data.jid}/rerun`, undefined, asKeeper);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.errors[0]).toMatchObject({ code: 'ERR_RERUN_ENV_NOT_KEPT' });
    expect(refused.json.errors[0].title).toMatch(/MODE/);
    expect(await runCount()).toBe(runs);
  });

  test('a run without env is rerun without env', async () => {
    agents[0]!.behaviour = fails;
    const started = await t.api.post('/commands', { command: 'plain', client_ids: ['env-1'] }, asAdmin);
    expect(started.status, started.text).toBe(200);
    const run = await runOf(started.json.data.jid);
    expect(run.env).toBeUndefined();
    agents[0]!.behaviour = () => ({ result: {} });
    const rerun = await t.api.post(`/commands/${started.json.data.jid}/rerun`, undefined, asOperator);
    expect(rerun.status, rerun.text).toBe(200);
    expect((await runOf(rerun.json.data.jid)).status).toBe('successful');
    expect(agents[0]!.runs.at(-1)?.env).toBeUndefined();
  });
});
