import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { prepareQuickstart } from '../../src/cli/quickstart.js';
import { setTomlString } from '../../src/cli/toml-edit.js';
import { loadConfig } from '../../src/cli/run.js';
import { parseSvcdConfig } from '../../src/config/schema.js';
import { createBcryptHasher } from '../../src/infra/bcrypt-hasher.js';
import { openDatabase } from '../../src/storage/database.js';
import { DatabaseUserStore } from '../../src/storage/database-user-store.js';

describe('setTomlString', () => {
  test('replaces the value in its own section only, keeping comments and line endings', () => {
    const text = [
      '# top comment',
      '[server]',
      'address = "0.0.0.0:8080"   # agents',
      '[api]',
      "  address='127.0.0.1:3000' # the API",
      'auth_file = "users.json"',
      '',
    ].join('\r\n');
    const edited = setTomlString(text, 'api', 'address', '127.0.0.1:4000');
    expect(edited).toBe(text.replace("'127.0.0.1:3000'", '"127.0.0.1:4000"'));
    expect(parseSvcdConfig(edited).server.address).toBe('0.0.0.0:8080');
  });

  test('adds the key to its section, or the section at the end, when missing', () => {
    expect(setTomlString('[api]\nauth_file = "u.json"\n', 'api', 'address', '127.0.0.1:1')).toBe(
      '[api]\naddress = "127.0.0.1:1"\nauth_file = "u.json"\n',
    );
    expect(setTomlString('[database]\ndb_type = "sqlite"', 'server', 'address', '[::1]:2')).toBe(
      '[database]\ndb_type = "sqlite"\n\n[server]\naddress = "[::1]:2"\n',
    );
  });

  test('does not touch a key of the same name in another section or a longer key', () => {
    const text = '[server]\naddress = "0.0.0.0:8080"\n[api]\naddress_old = "x"\n';
    expect(setTomlString(text, 'api', 'address', '127.0.0.1:5')).toBe(
      '[server]\naddress = "0.0.0.0:8080"\n[api]\naddress = "127.0.0.1:5"\naddress_old = "x"\n',
    );
  });
});

describe('quickstart on a new folder', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svcd-qs-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  test('seeds admin in the database tables; a run interrupted before the config was written starts over', async () => {
    const options = { dataDir: dir, apiAddress: '127.0.0.1:3000', clientAddress: '127.0.0.1:0' };
    const first = await prepareQuickstart(options);
    expect(first.created?.adminUser).toBe('admin');
    // As if the first run had died after seeding the database but before the config got its name.
    await rm(first.configPath);
    const second = await prepareQuickstart(options);
    const password = second.created?.adminPassword ?? '';
    expect(password).not.toBe(first.created?.adminPassword);
    expect((await readdir(dir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);

    const config = loadConfig(second.configPath);
    const database = await openDatabase(config.database, { dataDir: config.server.data_dir });
    try {
      const store = new DatabaseUserStore(database, { userTable: 'users', groupTable: 'groups' });
      const users = await store.list();
      expect(users.map((u) => [u.username, u.groups])).toEqual([['admin', ['Administrators']]]);
      expect(await createBcryptHasher().verify(password, users[0]?.passwordHash ?? '')).toBe(true);
    } finally {
      await database.close();
    }
  });
});

describe('quickstart on an existing setup', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svcd-qs-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const config = (api: string) =>
    `[server]\naddress = "0.0.0.0:8080"\n\n[api]\n${api}\nauth_file = "users.json"\n`;

  test('applies only the addresses given explicitly and keeps the file mode', async () => {
    const path = join(dir, 'svcd.conf');
    await writeFile(path, config('address = "127.0.0.1:3000"'), { mode: 0o640 });
    const result = await prepareQuickstart({
      dataDir: dir,
      apiAddress: '127.0.0.1:3000',
      clientAddress: '127.0.0.1:9090',
      explicit: { clientAddress: '127.0.0.1:9090' },
    });
    expect(result.created).toBeUndefined();
    expect(result.changed).toEqual([{ key: '[server] address', from: '0.0.0.0:8080', to: '127.0.0.1:9090' }]);
    expect(await readFile(path, 'utf8')).toBe(
      config('address = "127.0.0.1:3000"').replace('0.0.0.0:8080', '127.0.0.1:9090'),
    );
    expect((await stat(path)).mode & 0o777).toBe(0o640);

    const again = await prepareQuickstart({
      dataDir: dir,
      apiAddress: '127.0.0.1:7000',
      clientAddress: '0.0.0.0:8080',
      explicit: {}, // defaults, not given: the stored values stay
    });
    expect(again.changed).toEqual([]);
    expect(parseSvcdConfig(await readFile(path, 'utf8')).api.address).toBe('127.0.0.1:3000');
  });

  test('refuses, leaving the file as it is, when the layout does not allow a safe edit', async () => {
    const path = join(dir, 'svcd.conf');
    const original = config('"address" = "127.0.0.1:3000"');
    await writeFile(path, original);
    await expect(
      prepareQuickstart({
        dataDir: dir,
        apiAddress: '127.0.0.1:4000',
        clientAddress: '0.0.0.0:8080',
        explicit: { apiAddress: '127.0.0.1:4000' },
      }),
    ).rejects.toThrow(
      /cannot write \[api\] address into this file automatically; set \[api\] address there by hand/,
    );
    expect(await readFile(path, 'utf8')).toBe(original);
  });
});
