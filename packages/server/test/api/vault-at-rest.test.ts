import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import type { Auth } from '../../../../test-support/api-client.js';
import { postgresAdmin } from '../../../../test-support/databases.js';
import { ADMIN, startTestServer, type StoreKind, type TestServer } from '../../../../test-support/server.js';

const asAdmin: Auth = { basic: [ADMIN.username, ADMIN.password] };
const PASSWORD = 'Pw-at-rest-7d1e4c';
const VALUE = 'known-plaintext-3f9a0b2c-value';
const KEY = 'at-rest-key';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Every row of every table of svcd's PostgreSQL database, as text. */
async function postgresRows(database: string): Promise<string> {
  const client = new pg.Client({ ...(await postgresAdmin()), database });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      "select table_name as name from information_schema.tables where table_schema = 'public'",
    );
    expect(tables.rows.map((r) => r.name)).toEqual(expect.arrayContaining(['vault_entries', 'vault_key']));
    let text = '';
    for (const { name } of tables.rows) {
      const rows = await client.query<{ row: string }>(`select t::text as row from "${name}" t`);
      text += rows.rows.map((r) => r.row).join('\n');
    }
    return text;
  } finally {
    await client.end();
  }
}

let t: TestServer | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe.each(['database:sqlite', 'database:postgres'] as StoreKind[])('vault at rest on %s', (store) => {
  test('no plaintext value or password in the database or in debug logs', async () => {
    const logLines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
    t = await startTestServer({ store, users: [ADMIN], logger });
    const server = t;
    expect(
      (await server.api.post('/vault-admin/init', { password: PASSWORD }, { auth: asAdmin })).status,
    ).toBe(201);
    const created = await server.api.post(
      '/vault',
      { key: KEY, value: VALUE, type: 'secret' },
      { auth: asAdmin },
    );
    expect(created.status).toBe(201);
    const id = created.json.data.id as number;
    const put = await server.api.put(
      `/vault/${id}`,
      { key: KEY, value: `${VALUE}-2`, type: 'secret' },
      { auth: asAdmin },
    );
    expect(put.status).toBe(200);
    expect((await server.api.get(`/vault/${id}`, { auth: asAdmin })).json.data.value).toBe(`${VALUE}-2`);
    // Failed attempts are logged too: a wrong unlock password must not show up either.
    expect((await server.api.delete('/vault-admin/sesame', { auth: asAdmin })).status).toBe(204);
    const wrong = await server.api.post(
      '/vault-admin/sesame',
      { password: `${PASSWORD}-wrong` },
      { auth: asAdmin },
    );
    expect(wrong.status).toBe(401);
    expect(
      (await server.api.post('/vault-admin/sesame', { password: PASSWORD }, { auth: asAdmin })).status,
    ).toBe(201);

    let stored: Buffer;
    if (store === 'database:postgres') {
      stored = Buffer.from(await postgresRows(server.config.database.db_name));
      expect(stored.toString()).toContain(KEY); // the dump does hold the entry
    } else {
      const files = await filesUnder(server.dataDir);
      expect(files.map((f) => f.slice(server.dataDir.length + 1))).toEqual(
        expect.arrayContaining(['vault.db']),
      );
      stored = Buffer.concat(await Promise.all(files.map((f) => readFile(f))));
      expect(stored.includes(KEY)).toBe(true);
    }
    for (const secret of [VALUE, PASSWORD]) expect(stored.includes(secret)).toBe(false);

    const logs = logLines.join('');
    expect(logs).toContain('/vault'); // debug request lines were written
    for (const secret of [VALUE, PASSWORD]) expect(logs).not.toContain(secret);
  });
});
