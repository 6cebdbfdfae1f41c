import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient } from '../../../../test-support/agent-client.js';
import type { Auth } from '../../../../test-support/api-client.js';
import { ADMIN, OPERATOR, startTestServer, type TestServer } from '../../../../test-support/server.js';

const asAdmin: Auth = { basic: [ADMIN.username, ADMIN.password] };
const asOperator: Auth = { basic: [OPERATOR.username, OPERATOR.password] };
const VAULT_PASSWORD = 'vault-pass-1';
const SECRET_VALUE = 'hunter2-plaintext-secret';
const CLIENT_PASSWORD = 'secret-a-123';

interface Row {
  timestamp: string;
  username: string;
  remote_ip: string;
  application: string;
  action: string;
  outcome: string;
  affected_id: string;
  client_id: string;
  client_hostname: string;
  request: string;
  response: string;
}

describe('audit log (GET /auditlog)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      store: 'database:sqlite',
      clientAuth: { source: 'file', entries: { 'agents-a': CLIENT_PASSWORD } },
    });
  });
  afterAll(() => t?.stop());

  /** Every record matching the query (admin), after the queue was written. */
  const records = async (query = ''): Promise<Row[]> => {
    await t.server.flushAudit();
    const res = await t.api.get(`/auditlog?page[limit]=100${query}`, { auth: asAdmin });
    expect(res.status, res.text).toBe(200);
    return res.json.data as Row[];
  };

  test('logins, a 2FA-free login failure, writes, vault reads, refusals, runs, tunnels and agent connects are recorded', async () => {
    expect((await t.api.get('/login', { auth: asAdmin })).status).toBe(200);
    expect((await t.api.get('/login', { auth: { basic: ['admin', 'wrong-password'] } })).status).toBe(401);
    expect((await t.api.get('/clients', { auth: { basic: ['mallory', 'nope'] } })).status).toBe(401);
    const logins = await records('&filter[application]=auth.user');
    expect(logins).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ username: 'admin', action: 'success', outcome: 'success' }),
        expect.objectContaining({ username: 'admin', action: 'failed', outcome: 'refused' }),
        expect.objectContaining({ username: 'mallory', action: 'failed', outcome: 'refused' }),
      ]),
    );
    expect(logins.every((r) => r.remote_ip === '127.0.0.1')).toBe(true);
    expect(JSON.stringify(logins)).not.toContain('wrong-password');

    // A write with a password in the body: the user is recorded, the password is not.
    const created = await t.api.post(
      '/users',
      { username: 'carol', password: 'carol-password-1', groups: ['Operators'] },
      { auth: asAdmin },
    );
    expect(created.status, created.text).toBeLessThan(300);
    const [userWrite] = await records('&filter[application]=auth.user&filter[action]=create');
    expect(userWrite).toMatchObject({ username: 'admin', outcome: 'success' });
    expect(JSON.parse(userWrite?.request ?? '{}')).toMatchObject({
      method: 'POST',
      route: '/users',
      body: { username: 'carol', password: '[omitted]', groups: ['Operators'] },
    });

    // The vault: init/unlock passwords and the secret value never reach the log, the read of a secret does.
    expect(
      (await t.api.post('/vault-admin/init', { password: VAULT_PASSWORD }, { auth: asAdmin })).status,
    ).toBe(201);
    const entry = await t.api.post(
      '/vault',
      { key: 'db-password', value: SECRET_VALUE, type: 'secret' },
      { auth: asAdmin },
    );
    expect(entry.status, entry.text).toBe(201);
    const id = String(entry.json.data.id);
    const read = await t.api.get(`/vault/${id}`, { auth: asAdmin });
    expect(read.json.data.value).toBe(SECRET_VALUE);
    const vault = await records('&filter[application]=vault');
    expect(vault.map((r) => r.action).sort()).toEqual(['create', 'init', 'read']);
    expect(vault.find((r) => r.action === 'read')).toMatchObject({ affected_id: id, outcome: 'success' });
    expect(vault.find((r) => r.action === 'create')?.affected_id).toBe(id);
    const everything = JSON.stringify(await records());
    expect(everything).not.toContain(SECRET_VALUE);
    expect(everything).not.toContain(VAULT_PASSWORD);
    expect(everything).not.toContain('carol-password-1');

    // A refusal: a member of Operators may not create users.
    const refused = await t.api.post(
      '/users',
      { username: 'dave', password: 'dave-password-1' },
      { auth: asOperator },
    );
    expect(refused.status).toBe(403);
    const [refusal] = await records('&filter[outcome]=refused&filter[username]=operator');
    expect(refusal).toMatchObject({ application: 'auth.user', action: 'create' });
    expect(JSON.parse(refusal?.response ?? '{}')).toMatchObject({ status: 403, code: 'ERR_ADMIN_REQUIRED' });

    // An agent connects, runs a command, is asked for a tunnel, and disconnects.
    const port = t.server.clientPort;
    const agent = await connectClient(
      {
        url: `ws://127.0.0.1:${port}`,
        authId: 'agents-a',
        password: CLIENT_PASSWORD,
        fingerprint: t.server.fingerprint,
      },
      { client_id: 'web-1', name: 'Web One' },
    );
    agent.peer.on('job.run', () => ({ pid: 4711, started_at: new Date().toISOString() }));
    const run = await t.api.post('/clients/web-1/commands', { command: 'uptime' }, { auth: asOperator });
    expect(run.status, run.text).toBe(200);
    await t.api.put('/clients/web-1/tunnels?remote=127.0.0.1:22&scheme=ssh', undefined, { auth: asOperator });
    await agent.close();
    await expect
      .poll(
        async () => (await records('&filter[client_id]=web-1')).map((r) => `${r.application} ${r.action}`),
        {
          timeout: 10_000,
        },
      )
      .toEqual(
        expect.arrayContaining([
          'client connect',
          'client.command execute.start',
          'client.tunnel update',
          'client disconnect',
        ]),
      );
    const clientRecords = await records('&filter[client_id]=web-1');
    const started = clientRecords.find((r) => r.action === 'execute.start');
    expect(started).toMatchObject({ username: 'operator', client_hostname: 'test-host', outcome: 'success' });
    expect(started?.affected_id).not.toBe('');
    expect(JSON.parse(started?.request ?? '{}').body).toEqual({ command: 'uptime' });
    expect(clientRecords.find((r) => r.action === 'connect')).toMatchObject({ username: 'agents-a' });
  });

  test('filters, paging, sort, time range and CSV; reads themselves are not recorded', async () => {
    const before = (await t.api.get('/auditlog?page[limit]=1', { auth: asAdmin })).json.meta.count as number;
    await t.server.flushAudit();
    await t.api.get('/clients', { auth: asAdmin });
    await t.server.flushAudit();
    const all = await t.api.get('/auditlog?page[limit]=100', { auth: asAdmin });
    expect(all.json.meta.count).toBe(before);
    const rows = all.json.data as Row[];
    const times = rows.map((r) => r.timestamp);
    expect(times).toEqual([...times].sort().reverse());

    const page = await t.api.get('/auditlog?page[limit]=2&page[offset]=1&sort=timestamp', { auth: asAdmin });
    expect(page.json.data).toHaveLength(2);
    expect(page.json.meta.count).toBe(before);
    expect(page.json.data[0]).toEqual([...rows].reverse()[1]);

    const oldest = [...rows].reverse()[0]?.timestamp ?? '';
    const since = await t.api.get(`/auditlog?since=${encodeURIComponent(oldest)}&page[limit]=100`, {
      auth: asAdmin,
    });
    expect(since.json.meta.count).toBe(before);
    const until = await t.api.get(`/auditlog?until=${encodeURIComponent(oldest)}`, { auth: asAdmin });
    expect(until.json.meta.count).toBe(0);
    const badTime = await t.api.get('/auditlog?since=yesterday', { auth: asAdmin });
    expect([badTime.status, badTime.json.errors[0].title]).toEqual([400, 'since must be an RFC 3339 time']);
    const badFilter = await t.api.get('/auditlog?filter[password]=x', { auth: asAdmin });
    expect(badFilter.status).toBe(400);

    const fields = await t.api.get('/auditlog?fields[auditlog]=username,action&page[limit]=1', {
      auth: asAdmin,
    });
    expect(Object.keys(fields.json.data[0]).sort()).toEqual(['action', 'username']);

    const csv = await fetch(`${t.server.apiUrl}/auditlog?filter[username]=operator`, {
      headers: {
        accept: 'text/csv',
        authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`,
      },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe(
      'timestamp,username,remote_ip,application,action,outcome,affected_id,client_id,client_hostname,request,response',
    );
    const operatorCount = rows.filter((r) => r.username === 'operator').length;
    expect(lines).toHaveLength(operatorCount + 1);
    expect(lines.slice(1).every((l) => l.split(',')[1] === 'operator')).toBe(true);
  });

  test('only the auditlog permission reads it (Administrators without group permissions); records cannot be changed or deleted through the API; they survive a restart', async () => {
    expect((await t.api.get('/auditlog')).status).toBe(401);
    const refused = await t.api.get('/auditlog', { auth: asOperator });
    expect([refused.status, refused.json.errors[0].code]).toEqual([403, 'ERR_PERMISSION_REQUIRED']);
    expect(refused.json.errors[0].title).toBe('Missing permission "auditlog"');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await t.api.request(method, '/auditlog', { auth: asAdmin, body: {} });
      expect(res.status, method).toBe(405);
    }
    expect((await t.api.delete('/auditlog/1', { auth: asAdmin })).status).toBe(404);
    const count = (await t.api.get('/auditlog', { auth: asAdmin })).json.meta.count as number;
    await t.restart();
    // The 405s and the 404 above are writes too (refused ones); they were recorded before the restart.
    const after = await t.api.get('/auditlog', { auth: asAdmin });
    expect(after.json.meta.count).toBeGreaterThanOrEqual(count);
    expect(after.json.meta.count).toBeGreaterThan(0);
  });
});
