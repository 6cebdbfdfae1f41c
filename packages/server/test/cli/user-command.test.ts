import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { svcdConfigSchema, type SvcdConfig } from '../../src/config/schema.js';
import { runUserCommand } from '../../src/cli/user-command.js';
import { createBcryptHasher } from '../../src/infra/bcrypt-hasher.js';
import { openDatabase } from '../../src/storage/database.js';
import { DatabaseUserStore } from '../../src/storage/database-user-store.js';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';

const hasher = createBcryptHasher(4);
const names = { userTable: 'svc_users', groupTable: 'svc_groups' };

describe.each(ALL_ENGINES)('svcd user on a %s database store', (engine) => {
  let db: TestDatabase;
  let config: SvcdConfig;
  beforeEach(async () => {
    db = await createTestDatabase(engine);
    config = svcdConfigSchema.parse({
      server: { data_dir: db.dataDir },
      api: { auth_user_table: names.userTable, auth_group_table: names.groupTable },
      database: db.settings,
    });
  });
  afterEach(() => db?.drop());

  async function readUsers() {
    const database = await openDatabase(config.database, { dataDir: db.dataDir });
    try {
      return await new DatabaseUserStore(database, names).list();
    } finally {
      await database.close();
    }
  }

  test('add creates the tables and the user; change and delete apply at once', async () => {
    const added = await runUserCommand(
      config,
      { action: 'add', username: 'root-admin', groups: ['Administrators'], password: 'first-secret-1' },
      hasher,
    );
    expect(added).toMatch(/user 'root-admin' added in table svc_users/);
    await runUserCommand(
      config,
      { action: 'add', username: 'ops', groups: ['Ops'], password: 'ops-secret-12' },
      hasher,
    );
    let users = await readUsers();
    expect(users.map((u) => [u.username, u.groups])).toEqual([
      ['ops', ['Ops']],
      ['root-admin', ['Administrators']],
    ]);
    const oldHash = users.find((u) => u.username === 'ops')?.passwordHash ?? '';
    expect(await hasher.verify('ops-secret-12', oldHash)).toBe(true);

    await runUserCommand(
      config,
      { action: 'change', username: 'ops', groups: [], password: 'ops-secret-new' },
      hasher,
    );
    users = await readUsers();
    const ops = users.find((u) => u.username === 'ops');
    expect(ops?.groups).toEqual(['Ops']);
    expect(await hasher.verify('ops-secret-new', ops?.passwordHash ?? '')).toBe(true);

    await runUserCommand(config, { action: 'change', username: 'ops', groups: ['A', 'B'] }, hasher);
    expect((await readUsers()).find((u) => u.username === 'ops')?.groups).toEqual(['A', 'B']);

    await runUserCommand(config, { action: 'delete', username: 'ops', groups: [] }, hasher);
    expect((await readUsers()).map((u) => u.username)).toEqual(['root-admin']);
  });

  test('refuses what the API refuses: duplicates, unknown users, the last administrator, no password', async () => {
    await runUserCommand(
      config,
      { action: 'add', username: 'boss', groups: ['Administrators'], password: 'boss-secret-1' },
      hasher,
    );
    await expect(
      runUserCommand(
        config,
        { action: 'add', username: 'boss', groups: [], password: 'boss-secret-1' },
        hasher,
      ),
    ).rejects.toThrow(/already exists/);
    await expect(
      runUserCommand(
        config,
        { action: 'add', username: 'ＢＯＳＳ', groups: [], password: 'boss-secret-1' },
        hasher,
      ),
    ).rejects.toThrow("User 'ＢＯＳＳ' is too similar to the existing user 'boss'");
    await expect(
      runUserCommand(
        config,
        { action: 'add', username: 'bo\u202ess', groups: [], password: 'boss-secret-1' },
        hasher,
      ),
    ).rejects.toThrow(/username: must not contain bidirectional control characters/);
    await expect(
      runUserCommand(
        config,
        { action: 'add', username: 'ok', groups: ['a\u0000b'], password: 'ok-secret-12' },
        hasher,
      ),
    ).rejects.toThrow(/groups\.0: must not contain control characters/);
    await expect(
      runUserCommand(config, { action: 'delete', username: 'ghost', groups: [] }, hasher),
    ).rejects.toThrow(/not found/);
    await expect(
      runUserCommand(config, { action: 'delete', username: 'boss', groups: [] }, hasher),
    ).rejects.toThrow(/last member of Administrators/);
    await expect(
      runUserCommand(config, { action: 'add', username: 'nopass', groups: [] }, hasher),
    ).rejects.toThrow(/needs a password: add -p/);
    await expect(
      runUserCommand(config, { action: 'add', username: 'weak', groups: [], password: 'short' }, hasher),
    ).rejects.toThrow(/at least 8/);
  });
});

test('svcd user on a user file refuses look-alikes and takes names in NFC', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svcd-user-'));
  try {
    const file = join(dir, 'users.json');
    const config = svcdConfigSchema.parse({ server: { data_dir: dir }, api: { auth_file: file } });
    await runUserCommand(
      config,
      { action: 'add', username: 'Rene\u0301', groups: ['Administrators'], password: 'rene-secret-1' },
      hasher,
    );
    await expect(
      runUserCommand(
        config,
        { action: 'add', username: 'RENÉ', groups: [], password: 'rene-secret-2' },
        hasher,
      ),
    ).rejects.toThrow("User 'RENÉ' is too similar to the existing user 'René'");
    const saved = JSON.parse(await readFile(file, 'utf8')) as { username: string }[];
    expect(saved.map((u) => u.username)).toEqual(['René']);
    // The name as typed in the other normal form finds the user.
    await runUserCommand(
      config,
      { action: 'change', username: 'Rene\u0301', groups: ['Administrators', 'Ops'] },
      hasher,
    );
    const changed = JSON.parse(await readFile(file, 'utf8')) as { groups: string[] }[];
    expect(changed[0]?.groups).toEqual(['Administrators', 'Ops']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('svcd user refuses the static single-user mode', async () => {
  const config = svcdConfigSchema.parse({ api: { auth: 'admin:secret-pass' } });
  await expect(
    runUserCommand(config, { action: 'add', username: 'x', groups: [], password: 'x-secret-12' }),
  ).rejects.toThrow(/\[api\] auth: .*single static user/);
});
