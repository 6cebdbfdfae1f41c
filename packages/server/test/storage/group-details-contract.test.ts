import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { NO_PERMISSIONS } from '../../src/core/permissions/permission-map.js';
import type { GroupDetails } from '../../src/core/permissions/ports.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { DatabaseUserStore } from '../../src/storage/database-user-store.js';
import { SqlGroupDetailsRepository } from '../../src/storage/group-details-repository.js';

const HASH = '$2b$10$abcdefghijklmnopqrstuuN6VJ4wqMRg5ihGBv0XqLwZ7nS4lJrS.';

const group = (name: string, granted: Partial<GroupDetails['permissions']> = {}): GroupDetails => ({
  name,
  permissions: { ...NO_PERMISSIONS, ...granted },
  clientGroups: null,
  tunnelsRestricted: {},
  commandsRestricted: {},
});

let tableCounter = 0;

describe.each(ALL_ENGINES)('storage contract on %s: group details', (engine) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  /** Fresh user, membership and group_details tables, with the user store over them. */
  const open = async () => {
    tableCounter += 1;
    const names = {
      userTable: `gd_users_${tableCounter}`,
      groupTable: `gd_groups_${tableCounter}`,
      groupDetailsTable: `gd_details_${tableCounter}`,
    };
    const users = await DatabaseUserStore.open(database, names);
    return { names, users, repo: new SqlGroupDetailsRepository(database, names) };
  };

  it('saves, replaces, finds and lists rows; a group without a row is absent', async () => {
    const { repo } = await open();
    expect(await repo.find(['ops'])).toEqual([]);
    await repo.save({
      ...group('ops', { commands: true, 'client-groups': true }),
      commandsRestricted: { allow: ['^ls'], deny: ['rm'] },
      tunnelsRestricted: { ports: ['22'] },
    });
    await repo.save(group('Zoë 用户', { vault: true }));
    expect(await repo.find(['ops', 'missing'])).toEqual([
      {
        ...group('ops', { commands: true, 'client-groups': true }),
        commandsRestricted: { allow: ['^ls'], deny: ['rm'] },
        tunnelsRestricted: { ports: ['22'] },
      },
    ]);
    await repo.save(group('ops', { tunnels: true }));
    expect(await repo.find(['ops'])).toEqual([group('ops', { tunnels: true })]);
    expect((await repo.list()).map((g) => g.name)).toEqual(['Zoë 用户', 'ops'].sort());
    expect(await repo.find([])).toEqual([]);
  });

  it('compares names exactly, whatever the collation', async () => {
    const { repo } = await open();
    await repo.save(group('Ops', { commands: true }));
    expect(await repo.find(['ops'])).toEqual([]);
    expect(await repo.find(['Ops'])).toHaveLength(1);
  });

  it("reads rows written by hand: OpenRPort's text, unknown names and bad JSON grant nothing extra", async () => {
    const { names, repo } = await open();
    const db = database.db.withTables<Record<string, Record<string, string>>>();
    await db
      .insertInto(names.groupDetailsTable)
      .values({ name: 'legacy', permissions: '{"commands":true,"monitoring":true,"vault":"yes"}' })
      .execute();
    await db
      .insertInto(names.groupDetailsTable)
      .values({ name: 'broken', permissions: 'not json', tunnels_restricted: '[1]' })
      .execute();
    const [legacy] = await repo.find(['legacy']);
    expect(legacy).toEqual(group('legacy', { commands: true }));
    const [broken] = await repo.find(['broken']);
    expect(broken).toEqual(group('broken'));
  });

  it('lists the groups users are members of, and deleting a group removes its row and memberships', async () => {
    const { repo, users } = await open();
    await users.create({ username: 'alice', passwordHash: HASH, groups: ['ops', 'dev'] });
    await users.create({ username: 'bob', passwordHash: HASH, groups: ['ops'] });
    await repo.save(group('ops', { commands: true }));
    expect(await repo.memberGroups()).toEqual(['dev', 'ops']);
    expect(await repo.delete('ops')).toBe(true);
    expect(await repo.find(['ops'])).toEqual([]);
    expect((await users.find('alice'))?.groups).toEqual(['dev']);
    expect((await users.find('bob'))?.groups).toEqual([]);
    expect(await repo.delete('ops')).toBe(false);
    await repo.save(group('empty'));
    expect(await repo.delete('empty')).toBe(true);
  });

  it('two saves of one new group at once leave one row', async () => {
    const { repo } = await open();
    await Promise.all([repo.save(group('race', { vault: true })), repo.save(group('race', { vault: true }))]);
    expect(await repo.find(['race'])).toEqual([group('race', { vault: true })]);
  });
});
