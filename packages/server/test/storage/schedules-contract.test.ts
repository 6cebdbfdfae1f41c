import { parseListQuery } from '@svc/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ENGINES, createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import type { StoredFiring, StoredSchedule } from '../../src/core/schedules/ports.js';
import { SCHEDULE_LIST } from '../../src/core/schedules/schedule-list.js';
import { MULTI_JOB_LIST } from '../../src/core/jobs/multi-job-list.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { SqlMultiJobRepository } from '../../src/storage/multi-job-repository.js';
import { SqlScheduleRepository } from '../../src/storage/schedule-repository.js';

const at = (iso: string) => new Date(iso);

const schedule = (id: string, overrides: Partial<StoredSchedule> = {}): StoredSchedule => ({
  id,
  name: `schedule ${id}`,
  definition: {
    schedule: '*/5 * * * *',
    timezone: 'Europe/Berlin',
    type: 'command',
    command: 'echo ü "quoted"',
    client_ids: ['a', 'b'],
    group_ids: null,
    tags: null,
    labels: null,
    execute_concurrently: true,
    abort_on_error: false,
    overlaps: false,
    timeout_sec: 30,
    cwd: '/tmp',
    is_sudo: false,
    interpreter: '',
  },
  created_by: 'alice',
  created_at: at('2030-01-01T00:00:00.000Z'),
  updated_by: 'alice',
  updated_at: at('2030-01-01T00:00:00.000Z'),
  // Beyond 2^32 ms: the column must be BIGINT.
  next_run_at: at('2030-01-01T00:05:00.000Z'),
  ...overrides,
});

const firing = (
  scheduleId: string,
  iso: string,
  outcome: StoredFiring['outcome'],
  jid: string | null = null,
) => ({
  schedule_id: scheduleId,
  scheduled_at: at(iso),
  fired_at: at(iso),
  outcome,
  reason: outcome === 'started' ? '' : `why ${outcome}`,
  jid,
});

describe.each(ALL_ENGINES)('storage contract on %s: schedules', (engine) => {
  let testDb: TestDatabase;
  let database: Database;
  let repo: SqlScheduleRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(engine);
    database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
    repo = new SqlScheduleRepository(database);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it('stores, reads, replaces and deletes a schedule with every field as given', async () => {
    const s = schedule('s-1');
    await repo.insert(s);
    expect(await repo.get('s-1')).toEqual(s);
    expect(await repo.get('s-unknown')).toBeUndefined();

    const changed = schedule('s-1', {
      name: 'renamed',
      definition: {
        ...s.definition,
        type: 'script',
        command: undefined,
        script_id: 'lib-1',
        tags: { operator: 'AND', tags: ['x'] },
      },
      updated_by: 'bob',
      updated_at: at('2030-01-02T00:00:00.000Z'),
      next_run_at: null,
      created_by: 'ignored',
    });
    expect(await repo.replace(changed)).toBe(true);
    const read = await repo.get('s-1');
    expect(read).toEqual({
      ...changed,
      created_by: 'alice',
      definition: JSON.parse(JSON.stringify(changed.definition)),
    });
    expect(await repo.replace(schedule('s-unknown'))).toBe(false);

    await repo.recordFirings([firing('s-1', '2030-01-01T00:05:00Z', 'started', 'j-1')]);
    expect(await repo.delete('s-1')).toBe(true);
    expect(await repo.get('s-1')).toBeUndefined();
    expect(await repo.firings('s-1', 10)).toEqual([]);
    expect(await repo.delete('s-1')).toBe(false);
  });

  it('lists by the list grammar: filter, sort, page, count', async () => {
    for (const [id, name] of [
      ['l-1', 'list backup'],
      ['l-2', 'list cleanup'],
      ['l-3', 'list audit'],
    ] as const)
      await repo.insert(schedule(id, { name }));
    const query = parseListQuery(
      { 'filter[name]': 'list*', sort: '-name', 'page[limit]': '2' },
      SCHEDULE_LIST,
    );
    const { data, count } = await repo.list(query);
    expect(count).toBe(3);
    expect(data.map((s) => s.name)).toEqual(['list cleanup', 'list backup']);
  });

  it('gives the due schedules earliest first, and lets exactly one of many concurrent claims win', async () => {
    const due = at('2031-06-01T12:00:00.000Z');
    await repo.insert(schedule('d-late', { next_run_at: at('2031-06-01T12:01:00.000Z') }));
    await repo.insert(schedule('d-2', { next_run_at: due }));
    await repo.insert(schedule('d-1', { next_run_at: at('2031-06-01T11:59:00.000Z') }));
    await repo.insert(schedule('d-never', { next_run_at: null }));
    const found = (await repo.due(due, 100)).map((s) => s.id).filter((id) => id.startsWith('d-'));
    expect(found).toEqual(['d-1', 'd-2']);

    const next = at('2031-06-01T12:05:00.000Z');
    const claim = (id: string, expected: Date, to: Date | null) => repo.claim([{ id, expected, next: to }]);
    // Several nodes read the same rows and race: one conditional UPDATE changes each row.
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        repo.claim(
          (i % 2 ? ['d-2', 'd-1'] : ['d-1', 'd-2']).map((id) => ({
            id,
            expected: id === 'd-2' ? due : at('2031-06-01T11:59:00.000Z'),
            next: id === 'd-2' ? next : null,
          })),
        ),
      ),
    );
    for (const id of ['d-1', 'd-2'])
      expect(
        claims.filter((won) => won.has(id)),
        id,
      ).toHaveLength(1);
    expect((await repo.get('d-2'))?.next_run_at).toEqual(next);
    expect((await repo.get('d-1'))?.next_run_at).toBeNull();
    expect(await claim('d-2', due, next)).toEqual(new Set());
    expect(await claim('d-unknown', due, next)).toEqual(new Set());
    expect(await claim('d-2', next, at('2031-06-01T12:10:00.000Z'))).toEqual(new Set(['d-2']));
    expect(await repo.claim([])).toEqual(new Set());
  });

  it('records firings once per minute, newest first, and counts them by outcome', async () => {
    await repo.insert(schedule('f-1'));
    await repo.recordFirings([
      firing('f-1', '2030-01-01T00:05:00Z', 'started', 'j-1'),
      firing('f-1', '2030-01-01T00:10:00Z', 'skipped'),
    ]);
    await repo.recordFirings([firing('f-1', '2030-01-01T00:15:00Z', 'started', 'j-2')]);
    await repo.recordFirings([firing('f-1', '2030-01-01T00:20:00Z', 'missed')]);
    // The same minute again is not a second firing; the rest of the batch is still recorded.
    await repo.recordFirings([
      firing('f-1', '2030-01-01T00:20:00Z', 'failed'),
      { ...firing('f-1', '2030-01-01T00:25:00Z', 'failed'), reason: 'x'.repeat(5000) },
    ]);
    await repo.recordFirings([]);
    // Many in one call (more than one INSERT's rows).
    await repo.insert(schedule('f-many'));
    const many = Array.from({ length: 1200 }, (_, i) =>
      firing('f-many', new Date(Date.UTC(2030, 0, 1) + i * 60_000).toISOString(), 'started', `j-${i}`),
    );
    await repo.recordFirings(many);
    expect(await repo.firingCounts('f-many')).toEqual({ started: 1200, skipped: 0, missed: 0, failed: 0 });

    const all = await repo.firings('f-1', 10);
    expect(all.map((f) => [f.scheduled_at.toISOString(), f.outcome])).toEqual([
      ['2030-01-01T00:25:00.000Z', 'failed'],
      ['2030-01-01T00:20:00.000Z', 'missed'],
      ['2030-01-01T00:15:00.000Z', 'started'],
      ['2030-01-01T00:10:00.000Z', 'skipped'],
      ['2030-01-01T00:05:00.000Z', 'started'],
    ]);
    expect(all[0]?.reason).toHaveLength(1000);
    expect(all[2]).toEqual(firing('f-1', '2030-01-01T00:15:00Z', 'started', 'j-2'));
    expect(await repo.firings('f-1', 2)).toHaveLength(2);
    expect((await repo.lastStarted('f-1'))?.jid).toBe('j-2');
    expect(await repo.lastStarted('f-unknown')).toBeUndefined();
    expect(await repo.firingCounts('f-1')).toEqual({ started: 2, skipped: 1, missed: 1, failed: 1 });
    expect(await repo.firingCounts('f-unknown')).toEqual({ started: 0, skipped: 0, missed: 0, failed: 0 });
  });

  it('links a multi-client job to its schedule and lists runs by schedule_id', async () => {
    const multi = new SqlMultiJobRepository(database);
    const base = {
      started_at: '2030-01-01T00:05:00.000Z',
      created_by: 'alice',
      client_ids: ['a'],
      group_ids: null,
      tags: null,
      labels: null,
      command: 'id',
      cwd: '',
      interpreter: '',
      is_sudo: false,
      is_script: false,
      timeout_sec: 60,
      concurrent: false,
      abort_on_err: true,
    };
    await multi.insert({ ...base, jid: 'm-sched', schedule_id: 'f-1' }, ['a']);
    await multi.insert({ ...base, jid: 'm-plain' }, ['a']);
    expect((await multi.get('m-sched'))?.summary.schedule_id).toBe('f-1');
    expect((await multi.get('m-plain'))?.summary).not.toHaveProperty('schedule_id');
    const { data } = await multi.list(parseListQuery({ 'filter[schedule_id]': 'f-1' }, MULTI_JOB_LIST));
    expect(data.map((j) => j.jid)).toEqual(['m-sched']);
  });
});
