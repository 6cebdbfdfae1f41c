import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { clientGroupParamsSchema } from '@svc/protocol';
import { makeHello } from '../../../../../test-support/agent-client.js';
import { createTestDatabase, type TestDatabase } from '../../../../../test-support/databases.js';
import { ACCESS_TTL_MS, AccessControl } from '../../../src/core/access/access-control.js';
import { GroupPolicies } from '../../../src/core/access/group-policies.js';
import { ClientGroupsService } from '../../../src/core/client-groups/client-groups-service.js';
import { CachedClientDirectory } from '../../../src/core/clients/cached-client-directory.js';
import { ClientsService } from '../../../src/core/clients/clients-service.js';
import { LocalClientEvents } from '../../../src/core/clients/local-client-events.js';
import { CLIENT_LIST } from '../../../src/core/clients/client-list.js';
import { LiveConnections, type LiveConnection } from '../../../src/gateway/live-connections.js';
import { SqlClientGroupRepository } from '../../../src/storage/client-group-repository.js';
import { SqlClientRepository } from '../../../src/storage/client-repository.js';
import { openDatabase, type Database } from '../../../src/storage/database.js';
import { SqlGroupPolicyRepository } from '../../../src/storage/group-policy-repository.js';
import { ensureUserTables } from '../../../src/storage/user-tables.js';
import { parseListQuery } from '@svc/protocol';

const quiet = { info: () => undefined, warn: () => undefined };
const tables = { userTable: 'users', groupTable: 'groups', groupDetailsTable: 'group_details' };

describe('AccessControl over SQLite, the client directory and client groups', () => {
  let testDb: TestDatabase;
  let database: Database;
  let directory: CachedClientDirectory;
  let connections: LiveConnections;
  let groups: ClientGroupsService;
  let policies: GroupPolicies;
  /** Another node's view of the same table. */
  let elsewhere: GroupPolicies;
  let access: AccessControl;
  let now: number;
  const links = new Map<string, LiveConnection>();

  const attach = (id: string, tags: string[]) => {
    const link: LiveConnection = { sessionId: `s-${id}`, close: () => undefined };
    expect(
      connections.attach(link, makeHello({ client_id: id, session_id: link.sessionId, tags }), {
        clientAuthId: 'agents',
        address: '192.0.2.x:1',
      }).ok,
    ).toBe(true);
    links.set(id, link);
  };
  const retag = (id: string, tags: string[]) => {
    const link = links.get(id);
    expect(link && connections.updateFacts(id, link, { tags, labels: {}, facts: makeHello().facts })).toBe(
      true,
    );
  };
  const listed = async (groupsOfUser: string[]) => {
    const clients = new ClientsService(directory, groups);
    const { data } = await clients.list(
      parseListQuery({}, CLIENT_LIST),
      (await access.of({ groups: groupsOfUser })).scope,
    );
    return data.map((c) => c.id);
  };

  beforeEach(async () => {
    testDb = await createTestDatabase('sqlite');
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    const clock = { now: () => new Date('2030-01-01T00:00:00Z') };
    const events = new LocalClientEvents();
    directory = new CachedClientDirectory(new SqlClientRepository(database), events, 'node-1', clock, quiet);
    connections = new LiveConnections(directory, clock);
    await directory.load();
    groups = new ClientGroupsService(new SqlClientGroupRepository(database), directory, events);
    await ensureUserTables(database, tables);
    policies = new GroupPolicies(new SqlGroupPolicyRepository(database, tables));
    elsewhere = new GroupPolicies(new SqlGroupPolicyRepository(database, tables));
    now = 1_000_000;
    access = new AccessControl(policies, groups, () => now);
    for (const [id, tags] of [
      ['a', ['web']],
      ['b', ['web']],
      ['c', ['db']],
    ] as const)
      attach(id, [...tags]);
    for (const id of ['web', 'db'])
      await groups.create({ id, description: '', params: clientGroupParamsSchema.parse({ tag: [id] }) });
  });
  afterEach(async () => {
    await directory.flush();
    await database.close();
    await testDb.drop();
    links.clear();
  });

  test('scope: all groups limited → union; any group unlimited, no group or Administrators → everything', async () => {
    await policies.save('web-ops', { client_groups: ['web'] });
    await policies.save('db-ops', { client_groups: ['db'] });
    await policies.save('nobody', { client_groups: [] });
    expect(await listed(['web-ops'])).toEqual(['a', 'b']);
    expect(await listed(['web-ops', 'db-ops'])).toEqual(['a', 'b', 'c']);
    expect(await listed(['nobody'])).toEqual([]);
    expect(await listed(['web-ops', 'no-row'])).toEqual(['a', 'b', 'c']);
    expect(await listed(['web-ops', 'Administrators'])).toEqual(['a', 'b', 'c']);
    expect(await listed([])).toEqual(['a', 'b', 'c']);
  });

  test('a client whose tags change moves in or out of a remembered scope at once', async () => {
    await policies.save('web-ops', { client_groups: ['web'] });
    expect(await listed(['web-ops'])).toEqual(['a', 'b']);
    retag('c', ['web']);
    retag('a', ['db']);
    expect(await listed(['web-ops'])).toEqual(['b', 'c']);
    expect((await access.of({ groups: ['web-ops'] })).scope.has('a')).toBe(false);
  });

  test('a save here takes effect at once; a save on another node within ACCESS_TTL_MS', async () => {
    await policies.save('ops', { commands_restricted: { deny: ['^reboot'] } });
    const refused = async () => {
      try {
        (await access.of({ groups: ['ops'] })).commands.assertCommand('reboot');
        return false;
      } catch {
        return true;
      }
    };
    expect(await refused()).toBe(true);
    await policies.save('ops', { commands_restricted: {} });
    expect(await refused()).toBe(false);
    await elsewhere.save('ops', { commands_restricted: { deny: ['^reboot'] } });
    expect(await refused()).toBe(false);
    now += ACCESS_TTL_MS;
    expect(await refused()).toBe(true);
  });
});
