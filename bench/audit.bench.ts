/**
 * The audit log (issue 28 §4).
 *
 * 1. `GET /auditlog` over BENCH_AUDIT_RECORDS records (1,000,000): p99 of filtered pages (by username, action,
 *    client, time period; newest first) ≤ 50 ms on SQLite and PostgreSQL. Each query is the repository's list,
 *    i.e. the SQL the route runs (page + count), on a real database seeded through the batched insert.
 * 2. What recording costs on the request path: one real svcd in this process, requests from concurrent clients for
 *    BENCH_SECONDS each, with `[audit] enabled` false and true — a write (POST /client-groups-preview, audited) and
 *    GET /status (not audited). Target ≤ 10 % lower throughput.
 *
 *   npm run bench:audit
 *   BENCH_AUDIT_RECORDS=200000 BENCH_AUDIT_ENGINES=sqlite BENCH_SECONDS=2 npm run bench:audit   (a quick look)
 */
import { parseListQuery } from '@svc/protocol';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createTestDatabase } from '../test-support/databases.js';
import { ADMIN, startTestServer } from '../test-support/server.js';
import { AUDIT_LIST } from '../packages/server/src/core/audit/audit-list.js';
import type { AuditRecord } from '../packages/server/src/core/audit/ports.js';
import { SqlAuditRepository } from '../packages/server/src/storage/audit-repository.js';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { envNumber } from './support/child-processes.js';
import { summarize } from './support/latency.js';
import { checksTable, loadAverage, machine, progress, table, writeResult } from './support/report.js';

const RECORDS = Math.round(envNumber('BENCH_AUDIT_RECORDS', 1_000_000, 10_000_000));
const SECONDS = envNumber('BENCH_SECONDS', 5, 120);
/** BENCH_AUDIT_ENGINES=sqlite measures the list on one engine only (a quick check). */
const ENGINES = (process.env.BENCH_AUDIT_ENGINES ?? 'sqlite,postgres')
  .split(',')
  .filter((e): e is 'sqlite' | 'postgres' => e === 'sqlite' || e === 'postgres');
const CONCURRENCY = 16;
const ROUNDS = 3;
const USERS = 50;
const CLIENTS = 2_000;
const ACTIONS = ['create', 'update', 'delete', 'execute.start', 'success', 'failed', 'read'];
const START = Date.UTC(2026, 0, 1);
const SPAN_MS = 90 * 86_400_000;

const recordAt = (i: number): AuditRecord => ({
  timestamp: new Date(START + Math.floor((i / RECORDS) * SPAN_MS)),
  username: `user-${i % USERS}`,
  remote_ip: `10.0.${(i >> 8) & 255}.${i & 255}`,
  application: 'client.command',
  action: ACTIONS[i % ACTIONS.length] as string,
  outcome: i % 17 === 0 ? 'refused' : 'success',
  affected_id: `jid-${i}`,
  client_id: `client-${i % CLIENTS}`,
  client_hostname: `host-${i % CLIENTS}.example`,
  request: '{"method":"POST","route":"/clients/:id/commands","body":{"command":"uptime"}}',
  response: '{"status":200}',
});

const QUERIES: Record<string, string>[] = [
  { 'filter[username]': 'user-7' },
  { 'filter[action]': 'delete' },
  { 'filter[client_id]': 'client-1234' },
  { 'filter[username]': 'user-3', 'filter[action]': 'execute.start' },
  { 'filter[timestamp]': '2026-02-14' },
  { 'filter[client_id]': 'client-42', 'page[offset]': '10' },
];

async function listLatency(engine: 'sqlite' | 'postgres') {
  const testDb = await createTestDatabase(engine);
  const database = await openDatabase(testDb.settings, { dataDir: testDb.dataDir });
  try {
    const repo = new SqlAuditRepository(database);
    const seedStart = performance.now();
    const batch = 5_000;
    for (let i = 0; i < RECORDS; i += batch) {
      await repo.append(Array.from({ length: Math.min(batch, RECORDS - i) }, (_, k) => recordAt(i + k)));
      if (i % 200_000 === 0) progress(`${engine}: ${i} records`);
    }
    const seedSeconds = (performance.now() - seedStart) / 1000;
    // An append-only table in service is vacuumed by autovacuum (PostgreSQL ≥ 13 also after inserts only), which
    // sets the visibility map that lets a count be answered from the index alone; right after seeding it is not.
    if (engine === 'postgres') await sql`vacuum analyze audit_log`.execute(database.db);
    else await sql`analyze audit_log`.execute(database.db);
    const samples: number[] = [];
    const perQuery = QUERIES.map(() => [] as number[]);
    for (let round = 0; round < 50; round++) {
      for (const [i, q] of QUERIES.entries()) {
        const started = performance.now();
        await repo.list(parseListQuery(q, AUDIT_LIST));
        const ms = performance.now() - started;
        samples.push(ms);
        perQuery[i]?.push(ms);
      }
    }
    // Which query sets the p99: each one's own percentiles.
    const queries = QUERIES.map((q, i) => ({
      query: new URLSearchParams(q).toString(),
      ...summarize(perQuery[i] ?? []),
    }));
    return { engine, seedSeconds, ...summarize(samples), queries };
  } finally {
    await database.close();
    await testDb.drop();
  }
}

async function throughput(url: string, init: RequestInit): Promise<number> {
  const deadline = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const res = await fetch(url, init);
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`${url}: ${res.status}`);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

interface Measured {
  enabled: boolean;
  status: number;
  writes: number;
  recorded: number;
}

/** Both servers run at once; ROUNDS alternate rounds (off, on) and the best round of each counts (a loaded machine). */
async function requestCost(): Promise<[Measured, Measured]> {
  const servers = await Promise.all(
    [false, true].map(async (enabled) => {
      const t = await startTestServer({ store: 'database:sqlite', sections: { audit: { enabled } } });
      const authorization = `Bearer ${await t.api.login(ADMIN.username, ADMIN.password, 3600)}`;
      return { enabled, t, base: t.server.apiUrl ?? '', authorization };
    }),
  );
  try {
    const results: Measured[] = servers.map((s) => ({
      enabled: s.enabled,
      status: 0,
      writes: 0,
      recorded: 0,
    }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, s] of servers.entries()) {
        const result = results[i] as Measured;
        const read = { headers: { authorization: s.authorization } };
        const write = {
          method: 'POST',
          headers: { authorization: s.authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ params: { client_id: ['client-*'] } }),
        };
        result.status = Math.max(result.status, await throughput(`${s.base}/status`, read));
        result.writes = Math.max(result.writes, await throughput(`${s.base}/client-groups-preview`, write));
      }
    }
    const admin = { auth: { basic: [ADMIN.username, ADMIN.password] as [string, string] } };
    for (const [i, s] of servers.entries()) {
      await s.t.server.flushAudit();
      if (s.enabled)
        (results[i] as Measured).recorded = (await s.t.api.get('/auditlog', admin)).json.meta.count as number;
    }
    return [results[0] as Measured, results[1] as Measured];
  } finally {
    for (const s of servers) await s.t.stop();
  }
}

const lists: Awaited<ReturnType<typeof listLatency>>[] = [];
for (const engine of ENGINES) lists.push(await listLatency(engine));
const [off, on] = await requestCost();
const costStatus = 1 - on.status / off.status;
const costWrites = 1 - on.writes / off.writes;
const checks = [
  ...lists.map((l) => ({
    target: `GET /auditlog filtered page p99 over ${RECORDS} records, ${l.engine}`,
    limit: '≤ 50 ms',
    value: `${l.p99.toFixed(1)} ms`,
    pass: l.p99 <= 50,
  })),
  {
    target: 'audit cost on /status throughput',
    limit: '≤ 10 %',
    value: `${(costStatus * 100).toFixed(1)} %`,
    pass: costStatus <= 0.1,
  },
  {
    target: 'audit cost on write throughput',
    limit: '≤ 10 %',
    value: `${(costWrites * 100).toFixed(1)} %`,
    pass: costWrites <= 0.1,
  },
];
console.log(
  table(
    ['engine', 'seed s', 'p50 ms', 'p99 ms', 'max ms'],
    lists.map((l) => [
      l.engine,
      l.seedSeconds.toFixed(1),
      l.p50.toFixed(1),
      l.p99.toFixed(1),
      l.max.toFixed(1),
    ]),
  ),
);
console.log(
  table(
    ['engine', 'query', 'p50 ms', 'p99 ms'],
    lists.flatMap((l) =>
      l.queries.map((q) => [l.engine, decodeURIComponent(q.query), q.p50.toFixed(1), q.p99.toFixed(1)]),
    ),
  ),
);
console.log(
  table(
    ['audit', '/status req/s', 'write req/s', 'records'],
    [off, on].map((r) => [String(r.enabled), r.status.toFixed(0), r.writes.toFixed(0), String(r.recorded)]),
  ),
);
console.log(checksTable(checks));
console.log(`load average: ${loadAverage()}`);
await writeResult('audit', { machine: machine(), lists, off, on, checks });
process.exit(0);
