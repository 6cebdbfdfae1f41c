/**
 * Group members are followed one client change at a time (member-index.ts). These tests drive a real client directory,
 * live connections, client events and group repository over SQLite and check, after every kind of change, that the members are exactly what the
 * pure matcher says over all clients.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { clientGroupParamsSchema, type ClientGroupParams } from '@svc/protocol';
import { makeHello } from '../../../../test-support/agent-client.js';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { ClientGroupsService } from '../../src/core/client-groups/client-groups-service.js';
import { GroupMemberIndex } from '../../src/core/client-groups/member-index.js';
import { isMember } from '../../src/core/client-groups/membership.js';
import { CachedClientDirectory } from '../../src/core/clients/cached-client-directory.js';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { LiveConnections, type LiveConnection } from '../../src/gateway/live-connections.js';
import { SqlClientGroupRepository } from '../../src/storage/client-group-repository.js';
import { SqlClientRepository } from '../../src/storage/client-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';

const quiet = { info: () => undefined, warn: () => undefined };
const who = { clientAuthId: 'agents', address: '192.0.2.x:1000' };
const params = (p: Record<string, unknown>): ClientGroupParams => clientGroupParamsSchema.parse(p);

let testDb: TestDatabase;
let database: Database;
let now: Date;
let events: LocalClientEvents;
let directory: CachedClientDirectory;
let connections: LiveConnections;
let groups: ClientGroupsService;
const links = new Map<string, LiveConnection>();

const attach = (id: string, tags: string[], labels: Record<string, string> = {}): void => {
  const link: LiveConnection = { sessionId: `s-${id}`, close: () => undefined };
  const result = connections.attach(
    link,
    makeHello({ client_id: id, session_id: link.sessionId, tags, labels }),
    who,
  );
  expect(result.ok).toBe(true);
  links.set(id, link);
};
const retag = (id: string, tags: string[], labels: Record<string, string> = {}): void => {
  const link = links.get(id);
  const facts = makeHello().facts;
  expect(link && connections.updateFacts(id, link, { tags, labels, facts })).toBe(true);
};
const detach = (id: string): void => {
  const link = links.get(id);
  if (link) connections.detach(id, link);
  links.delete(id);
};
const create = (id: string, p: Record<string, unknown>) =>
  groups.create({ id, description: '', params: params(p) });
const members = async (id: string): Promise<string[] | undefined> => (await groups.get(id)).client_ids;

/** What the pure matcher says: every known client of these params, in the directory's id order. */
const expected = (p: ClientGroupParams): string[] =>
  directory
    .sortedById()
    .filter((r) => isMember(p, r))
    .map((r) => r.id);

beforeEach(async () => {
  testDb = await createTestDatabase('sqlite');
  database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  now = new Date('2030-01-01T00:00:00Z');
  const clock = { now: () => now };
  events = new LocalClientEvents();
  directory = new CachedClientDirectory(new SqlClientRepository(database), events, 'node-1', clock, quiet);
  connections = new LiveConnections(directory, clock);
  await directory.load();
  groups = new ClientGroupsService(new SqlClientGroupRepository(database), directory, events);
  links.clear();
});
afterEach(async () => {
  await directory.flush();
  await database.close();
  await testDb.drop();
});

describe('client group members follow client changes', () => {
  test('a client whose tags change moves in and out at once; other changes keep it where it is', async () => {
    attach('a', ['web']);
    attach('b', ['db']);
    await create('web', { tag: ['web'] });
    expect(await members('web')).toEqual(['a']);
    expect(await groups.membersOf(['web'])).toEqual(['a']);

    retag('b', ['web', 'db']);
    expect(await members('web')).toEqual(['a', 'b']);
    expect(await groups.membersOf(['web'])).toEqual(['a', 'b']);

    retag('a', ['mail']);
    expect(await members('web')).toEqual(['b']);
    expect(await groups.membersOf(['web'])).toEqual(['b']);

    // A change of fields no rule reads (tunnels, connection state) keeps the member; it stays after it leaves.
    directory.setTunnels('b', []);
    expect(await members('web')).toEqual(['b']);
    detach('b');
    expect(await groups.get('web')).toMatchObject({
      client_ids: ['b'],
      num_clients: 1,
      num_clients_connected: 0,
    });
    // Returning with other tags is a change like any other.
    attach('b', ['db']);
    expect(await members('web')).toEqual([]);
  });

  test('labels and an {and} rule follow changes too', async () => {
    attach('a', ['web'], { city: 'Cologne' });
    await create('web-cologne', { tag: { and: ['web', 'prod'] }, labels: ['city : col*'] });
    expect(await members('web-cologne')).toEqual([]);
    retag('a', ['web', 'prod'], { city: 'Cologne' });
    expect(await members('web-cologne')).toEqual(['a']);
    retag('a', ['web', 'prod'], { city: 'Berlin' });
    expect(await members('web-cologne')).toEqual([]);
  });

  test('new clients join in id order (as GET /clients sorts: case-insensitive first)', async () => {
    attach('c', ['x']);
    attach('a', ['x']);
    await create('x', { tag: ['x'] });
    expect(await members('x')).toEqual(['a', 'c']);
    attach('B', ['x']);
    attach('b', ['y']);
    expect(await members('x')).toEqual(['a', 'B', 'c']);
    expect(await groups.membersOf(['x'])).toEqual(directory.idsInOrder().filter((id) => id !== 'b'));
  });

  test('a deleted or purged client leaves every group', async () => {
    for (const id of ['a', 'b', 'c']) attach(id, ['all']);
    await create('all', { tag: ['all'] });
    await create('a-or-b', { client_id: ['a', 'b'] });
    expect(await groups.membersOf(['all', 'a-or-b'])).toEqual(['a', 'b', 'c']);

    detach('a');
    await directory.delete('a');
    expect(await members('all')).toEqual(['b', 'c']);
    expect(await members('a-or-b')).toEqual(['b']);

    detach('b');
    now = new Date(now.getTime() + 3600_000);
    expect(await directory.purge(60_000)).toBe(1);
    expect(await groups.membersOf(['all', 'a-or-b'])).toEqual(['c']);
    expect(await groups.get('a-or-b')).toMatchObject({ client_ids: [], num_clients: 0 });
  });

  test('a group created, updated or deleted has the right members, and its old rules are no longer followed', async () => {
    attach('a', ['web']);
    attach('b', ['db']);
    const created = await create('g', { tag: ['web'] });
    expect(created.client_ids).toEqual(['a']);
    const updated = await groups.update('g', { description: 'now db', params: params({ tag: ['db'] }) });
    expect(updated.client_ids).toEqual(['b']);
    expect(await members('g')).toEqual(['b']);
    retag('a', ['db']);
    expect(await groups.membersOf(['g'])).toEqual(['a', 'b']);
    await groups.delete('g');
    await expect(groups.membersOf(['g'])).rejects.toMatchObject({ code: 'ERR_CLIENT_GROUP_NOT_FOUND' });
    await create('g', { tag: ['web'] });
    expect(await members('g')).toEqual([]);
  });

  test('a group changed in the database by another node is read with its new rules', async () => {
    attach('a', ['web']);
    attach('b', ['db']);
    await create('g', { tag: ['web'] });
    expect(await members('g')).toEqual(['a']);
    const otherNode = new SqlClientGroupRepository(database);
    await otherNode.update({ id: 'g', description: '', params: params({ tag: ['db'] }) });
    expect(await members('g')).toEqual(['b']);
    expect(await groups.membersOf(['g'])).toEqual(['b']);
  });

  test('after the directory reloads from the database, members are computed again', async () => {
    attach('a', ['web']);
    await create('web', { tag: ['web'] });
    expect(await members('web')).toEqual(['a']);
    await directory.flush();
    const stored = new SqlClientRepository(database);
    await stored.delete('a');
    await directory.load();
    expect(await members('web')).toEqual([]);
  });

  test('num_clients_connected follows connects, disconnects and members moving in and out', async () => {
    attach('a', ['web']);
    attach('b', ['web']);
    await create('web', { tag: ['web'] });
    expect(await groups.get('web')).toMatchObject({ num_clients: 2, num_clients_connected: 2 });
    detach('a');
    expect(await groups.get('web')).toMatchObject({ num_clients: 2, num_clients_connected: 1 });
    retag('b', ['db']);
    expect(await groups.get('web')).toMatchObject({ num_clients: 1, num_clients_connected: 0 });
    attach('a', ['web']);
    attach('c', ['web']);
    expect(await groups.get('web')).toMatchObject({ client_ids: ['a', 'c'], num_clients_connected: 2 });
    await connections.closeAll('svcd is stopping');
    expect(await groups.get('web')).toMatchObject({ client_ids: ['a', 'c'], num_clients_connected: 0 });
  });

  test('GET /clients groups over many clients stay right when clients change between classifier calls', async () => {
    const ids = Array.from({ length: 40 }, (_, n) => `c-${String(n).padStart(2, '0')}`);
    for (const [n, id] of ids.entries()) attach(id, n % 2 ? ['odd'] : ['even']);
    await create('even', { tag: ['even'] });
    await create('odd', { tag: ['odd'] });
    await create('all', { client_id: ['c-*'] });
    const groupsOf = await groups.classifier();
    const of = (id: string) => {
      const record = directory.get(id);
      expect(record).toBeDefined();
      return record ? groupsOf(record) : [];
    };
    for (const [n, id] of ids.entries()) expect(of(id)).toEqual(n % 2 ? ['all', 'odd'] : ['all', 'even']);
    retag('c-00', ['odd']);
    expect(of('c-00')).toEqual(['all', 'odd']);
    expect(of('c-01')).toEqual(['all', 'odd']);
  });

  test('GET /clients groups: a record read before a change is classified as it was', async () => {
    attach('a', ['web']);
    await create('web', { tag: ['web'] });
    const before = directory.get('a');
    retag('a', ['db']);
    const groupsOf = await groups.classifier();
    expect(before && groupsOf(before)).toEqual(['web']);
    const after = directory.get('a');
    expect(after && groupsOf(after)).toEqual([]);
  });

  test('a long random run of changes always gives what the pure matcher gives', async () => {
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const TAGS = ['web', 'db', 'prod', 'Mail', 'eu-1', 'eu-2'];
    const someTags = () => TAGS.filter(() => random(3) === 0);
    const defined: Record<string, Record<string, unknown>> = {
      web: { tag: ['web'] },
      'web-prod': { tag: { and: ['web', 'prod'] } },
      eu: { tag: ['eu-*'], client_id: ['c*'] },
      mail: { tag: { or: ['mail', 'db'] } },
      odd: { labels: ['n: *1', 'n : *3', 'n:*5'] },
    };
    for (const [id, p] of Object.entries(defined)) await create(id, p);
    const ids = Array.from({ length: 30 }, (_, n) => `${n % 2 ? 'C' : 'c'}-${n}`);
    for (let step = 0; step < 400; step++) {
      const id = ids[random(ids.length)] ?? 'c-0';
      const connected = links.has(id);
      const action = random(5);
      if (!connected && directory.get(id) && action === 0) await directory.delete(id);
      else if (!connected) attach(id, someTags(), { n: String(random(10)) });
      else if (action === 1) detach(id);
      else if (action === 2) directory.setTunnels(id, []);
      else retag(id, someTags(), { n: String(random(10)) });
      if (step % 10 === 0) {
        for (const [group, p] of Object.entries(defined)) {
          const want = expected(params(p));
          const connected = want.filter((c) => directory.get(c)?.connection_state === 'connected');
          expect(await groups.get(group), `${group} at step ${step}`).toMatchObject({
            client_ids: want,
            num_clients: want.length,
            num_clients_connected: connected.length,
          });
        }
        const groupsOf = await groups.classifier();
        for (const record of directory.sortedById()) {
          const want = Object.keys(defined)
            .sort()
            .filter((g) => isMember(params(defined[g] ?? {}), record));
          expect(groupsOf(record), `groups of ${record.id} at step ${step}`).toEqual(want);
        }
        const all = Object.keys(defined);
        const union = directory.idsInOrder().filter((c) => {
          const record = directory.get(c);
          return record !== undefined && all.some((g) => isMember(params(defined[g] ?? {}), record));
        });
        expect(await groups.membersOf(all), `union at step ${step}`).toEqual(union);
      }
    }
  });
});

describe('GroupMemberIndex', () => {
  test('keeps at most its limit of groups, dropping the least recently used; a dropped group is rebuilt right', () => {
    attach('a', ['x']);
    attach('b', ['y']);
    const index = new GroupMemberIndex(directory, events, 2);
    const x = params({ tag: ['x'] });
    const y = params({ tag: ['y'] });
    const z = params({ tag: ['z'] });
    const first = index.of(x);
    index.of(y);
    expect(index.of(x)).toBe(first);
    index.of(z); // y was used least recently
    expect(index.size).toBe(2);
    expect(index.of(x)).toBe(first);
    retag('a', ['y']);
    expect([...index.of(y).inOrder(directory.idsInOrder())]).toEqual(['a', 'b']);
    expect([...index.of(x).inOrder(directory.idsInOrder())]).toEqual([]);
  });
});
