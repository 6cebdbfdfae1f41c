import { parseListQuery } from '@svc/protocol';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import { AUDIT_EXPORT, AUDIT_LIST } from '../../src/core/audit/audit-list.js';
import { AuditLog } from '../../src/core/audit/audit-log.js';
import { purgeAuditLog } from '../../src/core/audit/audit-retention.js';
import type { AuditRecord } from '../../src/core/audit/ports.js';
import { SqlAuditRepository } from '../../src/storage/audit-repository.js';
import { openDatabase, type Database } from '../../src/storage/database.js';

const DAY = 86_400_000;
const NOW = new Date('2031-06-15T12:00:00.000Z');

const record = (minutesAgo: number, overrides: Partial<AuditRecord> = {}): AuditRecord => ({
  timestamp: new Date(NOW.getTime() - minutesAgo * 60_000),
  username: 'alice',
  remote_ip: '192.0.2.7',
  application: 'client.command',
  action: 'execute.start',
  outcome: 'success',
  affected_id: `jid-${minutesAgo}`,
  client_id: 'web-1',
  client_hostname: 'web-1.example',
  request: JSON.stringify({ method: 'POST', body: { command: 'echo ü "quoted"' } }),
  response: '{"status":200}',
  ...overrides,
});

const silent = { warn: () => undefined, info: () => undefined };

describe.each(ALL_ENGINES)('storage contract on %s: audit log', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let repo: SqlAuditRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    repo = new SqlAuditRepository(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  if (engine === 'postgres')
    it('counts a filtered list from the (lower(column), timestamp) index alone, without reading the table', async () => {
      for (const column of ['username', 'action', 'client_id']) {
        const plan = await database.db.transaction().execute(async (trx) => {
          // Small tables are read whole; turned off, the planner shows which index scans it can do.
          await sql`set local enable_seqscan = off`.execute(trx);
          await sql`set local enable_bitmapscan = off`.execute(trx);
          const explained = await sql<{
            'QUERY PLAN': string;
          }>`explain select count(*) from audit_log where lower(${sql.ref(column)}) = 'x'`.execute(trx);
          return explained.rows.map((row) => row['QUERY PLAN']).join('\n');
        });
        expect(plan).toContain(`Index Only Scan using audit_log_${column}_idx`);
      }
    });

  it('appends in batches through the queue and lists with filters, sort, paging and a time range', async () => {
    const log = new AuditLog({ repository: repo, log: silent, batchSize: 3, flushDelayMs: 1 });
    log.record(record(1));
    log.record(record(2, { username: 'Bob', action: 'create', application: 'vault', client_id: '' }));
    log.record(record(3, { outcome: 'refused', client_id: 'db-1' }));
    log.record(record(4, { username: 'bob' }));
    log.record(record(5));
    await log.flush();
    expect(log.queued).toBe(0);

    const all = await repo.list(parseListQuery({}, AUDIT_LIST));
    expect(all.count).toBe(5);
    expect(all.data).toHaveLength(5);
    expect(all.data[0]).toEqual(record(1));
    expect(all.data.map((r) => r.affected_id)).toEqual(['jid-1', 'jid-2', 'jid-3', 'jid-4', 'jid-5']);

    const bob = await repo.list(parseListQuery({ 'filter[username]': 'bob' }, AUDIT_LIST));
    expect(bob.data.map((r) => r.affected_id)).toEqual(['jid-2', 'jid-4']);
    const web = await repo.list(
      parseListQuery({ 'filter[client_id]': 'web-1', sort: 'timestamp' }, AUDIT_LIST),
    );
    expect(web.data.map((r) => r.affected_id)).toEqual(['jid-5', 'jid-4', 'jid-1']);
    const refused = await repo.list(parseListQuery({ 'filter[outcome]': 'refused' }, AUDIT_LIST));
    expect(refused.data.map((r) => r.client_id)).toEqual(['db-1']);
    const page = await repo.list(parseListQuery({ 'page[limit]': '2', 'page[offset]': '2' }, AUDIT_LIST));
    expect([page.count, page.data.map((r) => r.affected_id)]).toEqual([5, ['jid-3', 'jid-4']]);
    const ranged = await repo.list(parseListQuery({}, AUDIT_LIST), {
      since: new Date(NOW.getTime() - 4 * 60_000),
      until: new Date(NOW.getTime() - 60_000),
    });
    expect(ranged.data.map((r) => r.affected_id)).toEqual(['jid-2', 'jid-3', 'jid-4']);

    const streamed: string[] = [];
    for await (const batch of repo.stream(
      parseListQuery({ 'filter[action]': 'execute.start' }, AUDIT_EXPORT),
      2,
    )) {
      expect(batch.length).toBeLessThanOrEqual(2);
      streamed.push(...batch.map((r) => r.affected_id));
    }
    expect(streamed).toEqual(['jid-1', 'jid-3', 'jid-4', 'jid-5']);
  });

  it('purges by retention at an injected clock; 0 days keeps everything', async () => {
    await repo.append([record(10 * 24 * 60), record(40 * 24 * 60), record(91 * 24 * 60)]);
    const before = (await repo.list(parseListQuery({}, AUDIT_LIST))).count;
    expect(await purgeAuditLog(repo, 0, { now: () => NOW })).toBe(0);
    expect(await purgeAuditLog(repo, 90, { now: () => NOW })).toBe(1);
    expect(await purgeAuditLog(repo, 30, { now: () => new Date(NOW.getTime() + DAY) })).toBe(1);
    const left = await repo.list(parseListQuery({}, AUDIT_LIST));
    expect(left.count).toBe(before - 2);
    expect(left.data.every((r) => NOW.getTime() - r.timestamp.getTime() < 31 * DAY)).toBe(true);
  });

  it('a full queue drops, counts and logs; a failed write keeps the batch for the next flush', async () => {
    const warnings: string[] = [];
    let failNext = true;
    const flaky = {
      ...repo,
      append: (records: readonly AuditRecord[]) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('database down'));
        }
        return repo.append(records);
      },
      list: repo.list.bind(repo),
      stream: repo.stream.bind(repo),
      purgeBefore: repo.purgeBefore.bind(repo),
    };
    const log = new AuditLog({
      repository: flaky,
      log: { warn: (_f, m) => warnings.push(m), info: () => undefined },
      maxQueued: 2,
      flushDelayMs: 60_000,
    });
    log.record(record(0, { affected_id: 'q-1' }));
    log.record(record(0, { affected_id: 'q-2' }));
    log.record(record(0, { affected_id: 'q-3' }));
    expect([log.queued, log.dropped]).toEqual([2, 1]);
    expect(warnings).toEqual(['audit log queue full: records dropped']);
    await log.flush();
    expect(log.queued).toBe(2);
    expect(warnings[1]).toBe('audit log write failed; retrying');
    await log.close();
    const stored = await repo.list(parseListQuery({ 'filter[affected_id]': 'q-*' }, AUDIT_LIST));
    expect(stored.data.map((r) => r.affected_id).sort()).toEqual(['q-1', 'q-2']);
  });
});
