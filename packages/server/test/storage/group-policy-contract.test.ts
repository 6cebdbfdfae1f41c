import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { GroupPolicies } from '../../src/core/access/group-policies.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlGroupPolicyRepository } from '../../src/storage/group-policy-repository.js';
import { ensureUserTables, userTablesDb } from '../../src/storage/user-tables.js';

const names = { userTable: 'users', groupTable: 'groups', groupDetailsTable: 'group_details' };

describe.each(ALL_ENGINES)('storage contract on %s: user group scope and restrictions', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let repo: SqlGroupPolicyRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    await ensureUserTables(database, names);
    repo = new SqlGroupPolicyRepository(database, names);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  const row = (name: string) =>
    userTablesDb(database, names)
      .selectFrom('group_details_table')
      .selectAll()
      .where('name', '=', name)
      .executeTakeFirst();

  it('a group without a row has no policy; a saved one reads back as written', async () => {
    expect(await repo.policiesOf(['nobody'])).toEqual([]);
    await repo.save('ops', {
      clientGroups: ['web', 'db'],
      commandsRestricted: { allow: ['^df', 'ü'], deny: ['"quoted"'] },
      tunnelsRestricted: { allow: { scheme: ['ssh'], remote: [22, '8000-8100'], acl: ['10.0.0.0/8'] } },
    });
    expect(await repo.policiesOf(['ops', 'nobody'])).toEqual([
      {
        group: 'ops',
        clientGroups: ['web', 'db'],
        commandsRestricted: { allow: ['^df', 'ü'], deny: ['"quoted"'] },
        tunnelsRestricted: { allow: { scheme: ['ssh'], remote: [22, '8000-8100'], acl: ['10.0.0.0/8'] } },
      },
    ]);
  });

  it('saving changes only the fields given and keeps the other keys of permissions', async () => {
    await userTablesDb(database, names)
      .insertInto('group_details_table')
      .values({
        name: 'web',
        permissions: '{"commands":true,"tunnels":false}',
        commands_restricted: '{}',
        tunnels_restricted: '{}',
      })
      .execute();
    await repo.save('web', { clientGroups: ['web'] });
    expect(JSON.parse((await row('web'))?.permissions ?? '')).toEqual({
      commands: true,
      tunnels: false,
      client_groups: ['web'],
    });
    await repo.save('web', { commandsRestricted: { deny: ['reboot'] } });
    const [policy] = await repo.policiesOf(['web']);
    expect(policy).toEqual({
      group: 'web',
      clientGroups: ['web'],
      commandsRestricted: { deny: ['reboot'] },
      tunnelsRestricted: {},
    });
    await repo.save('web', { clientGroups: null });
    expect(JSON.parse((await row('web'))?.permissions ?? '')).toEqual({ commands: true, tunnels: false });
    expect((await repo.policiesOf(['web']))[0]?.clientGroups).toBeNull();
  });

  it('names are exact: a group differing in case is another group', async () => {
    await repo.save('Ops2', { clientGroups: [] });
    expect(await repo.policiesOf(['ops2'])).toEqual([]);
    expect((await repo.policiesOf(['Ops2']))[0]?.clientGroups).toEqual([]);
  });

  it('concurrent first saves of one group both land', async () => {
    await Promise.all([
      repo.save('race', { commandsRestricted: { allow: ['^a'] } }),
      repo.save('race', { tunnelsRestricted: { deny: { remote: [23] } } }),
    ]);
    const [policy] = await repo.policiesOf(['race']);
    expect(policy?.commandsRestricted).toEqual({ allow: ['^a'] });
    expect(policy?.tunnelsRestricted).toEqual({ deny: { remote: [23] } });
  });

  it('a row written around the API that does not parse is an error naming the group, not "no limits"', async () => {
    await userTablesDb(database, names)
      .insertInto('group_details_table')
      .values({
        name: 'broken',
        permissions: '{}',
        commands_restricted: '{"allow":"^df"}',
        tunnels_restricted: '{}',
      })
      .execute();
    await expect(repo.policiesOf(['broken'])).rejects.toMatchObject({
      code: 'ERR_STORED_GROUP_POLICY_INVALID',
      message: "The stored restrictions of user group 'broken' are invalid",
    });
    await sql`UPDATE group_details SET commands_restricted = 'not json' WHERE name = 'broken'`.execute(
      database.db,
    );
    await expect(repo.policiesOf(['broken'])).rejects.toMatchObject({
      code: 'ERR_STORED_GROUP_POLICY_INVALID',
    });
  });

  it('GroupPolicies.save validates before it stores', async () => {
    const policies = new GroupPolicies(repo);
    await expect(policies.save('bad', { commands_restricted: { allow: ['(x+)+'] } })).rejects.toMatchObject({
      code: 'ERR_INVALID_GROUP_POLICY',
    });
    expect(await repo.policiesOf(['bad'])).toEqual([]);
    await policies.save('good', {
      client_groups: ['web'],
      tunnels_restricted: { allow: { scheme: ['rdp'] } },
    });
    expect(await policies.of(['good'])).toEqual([
      {
        group: 'good',
        clientGroups: ['web'],
        commandsRestricted: {},
        tunnelsRestricted: { allow: { scheme: ['rdp'] } },
      },
    ]);
  });
});
