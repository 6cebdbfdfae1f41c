/**
 * Client groups (issue 15): resolving `group_ids` and reading a big group, at 10,000 clients and 100 groups.
 *
 * 1. Core, in this process: a real client directory (SQLite-backed) holding BENCH_CLIENTS connected records with the
 *    simulator's varied tags and labels, a real ClientGroupsService over SQLite with 100 groups. Times
 *    `membersOf` (what POST /commands with group_ids calls) for all 100 groups and for 5 groups, and `get` of a
 *    group with half the clients as members: after a client's tags change (it moves out of or into groups), after
 *    a change no group rule reads, and with nothing changed.
 *    Scoped listing (issue 28 §2): GET /clients's work in core — the caller's access (user group policies read from
 *    SQLite's group_details, the scope's member sets) and ClientsService.list of the default page — for an
 *    administrator (unscoped) and for users scoped to the 5,000-member group and to all 100 groups (every client).
 *    Target: the scoped list costs at most 10 % of the unscoped one's throughput.
 * 2. API, real processes: one svcd and BENCH_CLIENTS simulated agents (bench/support, the agent's own link code).
 *    100 groups are created with POST /client-groups; times GET /client-groups/{id} of the 5,000-member group and
 *    GET /clients?filter[groups]=<all 100 ids>&page[limit]=1 (every client against every group, as group_ids
 *    resolution does, plus HTTP).
 *
 *   npm run build && npm run bench:groups
 *
 * Environment: BENCH_CLIENTS (10000), BENCH_WORKERS (4), BENCH_REQUESTS (300), BENCH_CORE_RUNS (200),
 * BENCH_SKIP_API=1 (core part only), BENCH_STRICT=1 (exit 1 when a target fails), and the load knobs of
 * load-settings.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { clientGroupParamsSchema, parseListQuery, type Hello } from '../packages/protocol/src/index.js';
import { AccessControl } from '../packages/server/src/core/access/access-control.js';
import { GroupPolicies } from '../packages/server/src/core/access/group-policies.js';
import { CLIENT_LIST } from '../packages/server/src/core/clients/client-list.js';
import { ClientsService } from '../packages/server/src/core/clients/clients-service.js';
import { SqlGroupPolicyRepository } from '../packages/server/src/storage/group-policy-repository.js';
import { ensureUserTables } from '../packages/server/src/storage/user-tables.js';
import { systemClock } from '../packages/server/src/core/auth/ports.js';
import { ClientGroupsService } from '../packages/server/src/core/client-groups/client-groups-service.js';
import { CachedClientDirectory } from '../packages/server/src/core/clients/cached-client-directory.js';
import { LocalClientEvents } from '../packages/server/src/core/clients/local-client-events.js';
import { LiveConnections, type LiveConnection } from '../packages/server/src/gateway/live-connections.js';
import { SqlClientGroupRepository } from '../packages/server/src/storage/client-group-repository.js';
import { SqlClientRepository } from '../packages/server/src/storage/client-repository.js';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { TEST_FACTS } from '../test-support/facts.js';
import { runBench, onCleanUp } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { summarize, sequentialLatencies, type LatencySummary } from './support/latency.js';
import { loadSettings } from './support/load-settings.js';
import { startLoadSetup, waitListed } from './support/load-setup.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';
import { simulatedAttributes } from './support/simulated-attributes.js';

const TARGETS = { maxResolveMs: 50, maxBigGroupP99Ms: 50, maxScopeCostPercent: 10 };
const SETTINGS = loadSettings(10_000);
const CLIENTS = SETTINGS.clients;
const REQUESTS = envNumber('BENCH_REQUESTS', 300, 100_000);
const CORE_RUNS = envNumber('BENCH_CORE_RUNS', 200, 100_000);
const SKIP_API = process.env['BENCH_SKIP_API'] === '1';
const BIG_GROUP = 'even';

/**
 * 100 groups of the shapes people write: a tag per rack (98 of them, some with wildcards, and/or, labels), one
 * group with every even-numbered client (half of all) and one matching by label wildcard.
 */
function groupDefinitions(): { id: string; params: Record<string, unknown> }[] {
  const groups: { id: string; params: Record<string, unknown> }[] = [
    { id: BIG_GROUP, params: { tag: ['EVEN'] } },
    { id: 'zone-z1x', params: { labels: ['zone : z1*'], hostname: ['sim-*'] } },
  ];
  for (let rack = 0; groups.length < 100; rack++) {
    const id = `rack-${rack}`;
    const shape = rack % 4;
    const params =
      shape === 0
        ? { tag: [id] }
        : shape === 1
          ? { tag: { and: ['simulated', id] } }
          : shape === 2
            ? { tag: { or: [id, `no-such-tag-${rack}`] }, client_id: ['sim-*'] }
            : { tag: [`*ck-${rack}`], labels: ['bench:load-*'] };
    groups.push({ id, params });
  }
  return groups;
}

const fixed = (s: LatencySummary) =>
  [s.p50, s.p90, s.p99, s.max].map((v) => v.toFixed(2)).join(' / ') + ' ms';

const timeAsync = async (runs: number, fn: () => Promise<unknown>): Promise<LatencySummary> => {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return summarize(samples);
};

async function core(): Promise<{ rows: string[][]; checks: Check[]; figures: Record<string, unknown> }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-groups-bench-'));
  onCleanUp(() => rm(dir, { recursive: true, force: true }));
  const database = await openDatabase(
    { db_type: 'sqlite', db_name: 'groups-bench.db', db_host: '', db_user: '', db_password: '' },
    { dataDir: dir },
  );
  onCleanUp(() => database.close());
  const events = new LocalClientEvents();
  const directory = new CachedClientDirectory(
    new SqlClientRepository(database),
    events,
    'bench',
    systemClock,
    pino({ level: 'silent' }),
  );
  const connections = new LiveConnections(directory, systemClock);
  await directory.load();
  const digits = String(CLIENTS - 1).length;
  const links = new Map<string, { connection: LiveConnection; hello: Hello }>();
  for (let n = 0; n < CLIENTS; n++) {
    const id = `sim-${String(n).padStart(digits, '0')}`;
    const connection: LiveConnection = { sessionId: `s-${n}`, close: () => undefined };
    const hello: Hello = {
      client_id: id,
      name: id,
      session_id: connection.sessionId,
      version: '0.1.0',
      ...simulatedAttributes(id),
      facts: { ...TEST_FACTS, hostname: id },
    };
    connections.attach(connection, hello, { clientAuthId: 'bench', address: '127.0.0.x:1' });
    links.set(id, { connection, hello });
  }
  await directory.flush();
  const service = new ClientGroupsService(new SqlClientGroupRepository(database), directory, events);
  const groups = groupDefinitions();
  for (const g of groups) {
    await service.create({ id: g.id, description: '', params: clientGroupParamsSchema.parse(g.params) });
  }
  const ids = groups.map((g) => g.id);
  const five = ids.slice(2, 7);
  const all = await service.membersOf(ids);
  const big = await service.get(BIG_GROUP);
  progress(`core: ${CLIENTS} records, 100 groups; all groups resolve to ${all.length} clients`);
  if (big.client_ids?.length !== Math.ceil(CLIENTS / 2)) throw new Error(`group ${BIG_GROUP}: wrong members`);

  // "After a tags change": before every call one client's tags change so that it leaves or joins groups (its
  // rack groups and 'even'), as a facts update does; "after a tunnels change": a change no group rule reads;
  // "unchanged": nothing changed since the previous call.
  let tick = 0;
  const nextId = () => {
    tick += 1;
    return `sim-${String(tick % CLIENTS).padStart(digits, '0')}`;
  };
  const retag = () => {
    const id = nextId();
    const link = links.get(id);
    if (!link) throw new Error(`no client ${id}`);
    const tags = tick % 2 === 1 ? [...link.hello.tags, 'EVEN'] : ['moved'];
    link.hello = { ...link.hello, tags };
    connections.updateFacts(id, link.connection, {
      tags,
      labels: link.hello.labels,
      facts: link.hello.facts,
    });
  };
  const retunnel = () => directory.setTunnels(nextId(), []);
  const after = (change: () => void, fn: () => Promise<unknown>) => () => {
    change();
    return fn();
  };
  const resolveAll = await timeAsync(
    CORE_RUNS,
    after(retag, () => service.membersOf(ids)),
  );
  const resolveFive = await timeAsync(
    CORE_RUNS,
    after(retag, () => service.membersOf(five)),
  );
  const getBig = await timeAsync(
    CORE_RUNS,
    after(retag, () => service.get(BIG_GROUP)),
  );
  const resolveAllTunnels = await timeAsync(
    CORE_RUNS,
    after(retunnel, () => service.membersOf(ids)),
  );
  const resolveAllWarm = await timeAsync(CORE_RUNS, () => service.membersOf(ids));
  const getBigWarm = await timeAsync(CORE_RUNS, () => service.get(BIG_GROUP));
  await directory.flush();

  const tables = { userTable: 'users', groupTable: 'groups', groupDetailsTable: 'group_details' };
  await ensureUserTables(database, tables);
  const policies = new GroupPolicies(new SqlGroupPolicyRepository(database, tables));
  await policies.save('scoped-big', { client_groups: [BIG_GROUP] });
  await policies.save('scoped-all', { client_groups: ids });
  const access = new AccessControl(policies, service);
  const clients = new ClientsService(directory, service);
  const page = parseListQuery({}, CLIENT_LIST);
  const listAs = (groups: string[]) => async () => clients.list(page, (await access.of({ groups })).scope);
  const scopedCount = (await listAs(['scoped-all'])()).count;
  const inAll = (await service.membersOf(ids)).length;
  if (scopedCount !== inAll) throw new Error(`scoped to all groups: ${scopedCount} listed, ${inAll} members`);
  await timeAsync(20, listAs(['Administrators']));
  const listAdmin = await timeAsync(CORE_RUNS, listAs(['Administrators']));
  const listBig = await timeAsync(CORE_RUNS, listAs(['scoped-big']));
  const listAll = await timeAsync(CORE_RUNS, listAs(['scoped-all']));
  // Throughput is 1 / mean time; the cost is the throughput lost against the unscoped listing.
  const cost = (scoped: LatencySummary) => (1 - listAdmin.mean / scoped.mean) * 100;
  const worstCost = Math.max(cost(listBig), cost(listAll));
  return {
    rows: [
      [
        `membersOf(100 groups) after a tags change, ${CORE_RUNS} calls p50 / p90 / p99 / max`,
        fixed(resolveAll),
      ],
      [`membersOf(5 groups) after a tags change`, fixed(resolveFive)],
      [`get('${BIG_GROUP}', ${big.client_ids.length} members) after a tags change`, fixed(getBig)],
      [`membersOf(100 groups) after a tunnels change`, fixed(resolveAllTunnels)],
      [`membersOf(100 groups), clients unchanged`, fixed(resolveAllWarm)],
      [`get('${BIG_GROUP}'), clients unchanged`, fixed(getBigWarm)],
      [`GET /clients default page in core, administrator (unscoped)`, fixed(listAdmin)],
      [`... scoped to '${BIG_GROUP}', cost ${cost(listBig).toFixed(1)} %`, fixed(listBig)],
      [`... scoped to all 100 groups (${inAll} clients), cost ${cost(listAll).toFixed(1)} %`, fixed(listAll)],
    ],
    checks: [
      {
        target: `resolve group_ids naming all 100 groups over ${CLIENTS} clients after a tags change (core, p99)`,
        value: `${resolveAll.p99.toFixed(2)} ms`,
        limit: `<= ${TARGETS.maxResolveMs} ms`,
        pass: resolveAll.p99 <= TARGETS.maxResolveMs,
      },
      {
        target: `GET /clients throughput lost by a scoped user's access check and scope (core, ${CLIENTS} clients)`,
        value: `${worstCost.toFixed(1)} %`,
        limit: `<= ${TARGETS.maxScopeCostPercent} %`,
        pass: worstCost <= TARGETS.maxScopeCostPercent,
      },
    ],
    figures: {
      resolveAll,
      resolveFive,
      getBig,
      resolveAllTunnels,
      resolveAllWarm,
      getBigWarm,
      listAdmin,
      listBig,
      listAll,
      members: all.length,
    },
  };
}

async function api(): Promise<{ rows: string[][]; checks: Check[]; figures: Record<string, unknown> }> {
  const { svcd, api: client, newFleet } = await startLoadSetup('groups', SETTINGS, 1);
  const groups = groupDefinitions();
  for (const g of groups) {
    const answer = await client.request('POST', '/client-groups', { id: g.id, params: g.params });
    if (answer.status !== 201)
      throw new Error(`POST /client-groups ${g.id}: HTTP ${answer.status} ${answer.body}`);
  }
  const fleet = newFleet();
  fleet.start();
  await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(`${s.connected}/${CLIENTS} connected; svcd RSS ${(svcd.rssKiB() / 1024).toFixed(0)} MiB`),
  );
  await waitListed(client, CLIENTS);
  const bigPath = `/client-groups/${BIG_GROUP}`;
  const big = await client.getJson<{ client_ids: string[]; num_clients_connected: number }>(bigPath);
  if (big.data.client_ids.length !== CLIENTS / 2 || big.data.num_clients_connected !== CLIENTS / 2)
    throw new Error(`GET ${bigPath}: ${big.data.client_ids.length} members`);
  const filterPath = `/clients?filter[groups]=${groups.map((g) => g.id).join(',')}&page[limit]=1&fields[clients]=id`;
  const filtered = await client.getJson(filterPath);
  progress(
    `API: ${CLIENTS} agents connected; group ${BIG_GROUP} has ${big.data.client_ids.length} members; ` +
      `filter over 100 groups counts ${String(filtered.meta?.count)}`,
  );

  await sequentialLatencies(client, bigPath, 30);
  const bigGroup = summarize(await sequentialLatencies(client, bigPath, REQUESTS));
  await sequentialLatencies(client, filterPath, 10);
  const filter = summarize(await sequentialLatencies(client, filterPath, Math.min(REQUESTS, 100)));
  const list = summarize(
    await sequentialLatencies(
      client,
      '/client-groups?page[limit]=100&fields[client_groups]=id,num_clients',
      20,
    ),
  );
  fleet.check();
  await svcd.stop(120_000);
  return {
    rows: [
      [
        `GET ${bigPath} (${CLIENTS / 2} members, ${REQUESTS} sequential) p50 / p90 / p99 / max`,
        fixed(bigGroup),
      ],
      [`GET /clients?filter[groups]=<100 ids>&page[limit]=1 (${filter.count} sequential)`, fixed(filter)],
      [`GET /client-groups?page[limit]=100 with num_clients (20 sequential)`, fixed(list)],
    ],
    checks: [
      {
        target: `GET /client-groups/{id}, ${CLIENTS / 2} members, p99 (API, ${CLIENTS} agents)`,
        value: `${bigGroup.p99.toFixed(1)} ms`,
        limit: `<= ${TARGETS.maxBigGroupP99Ms} ms`,
        pass: bigGroup.p99 <= TARGETS.maxBigGroupP99Ms,
      },
    ],
    figures: { bigGroup, filterAllGroups: filter, listGroups: list },
  };
}

async function main(): Promise<boolean> {
  const loadBefore = loadAverage();
  const coreResult = await core();
  const apiResult = SKIP_API ? { rows: [], checks: [], figures: {} } : await api();
  const checks = [...coreResult.checks, ...apiResult.checks];
  const file = await writeResult('client-groups', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, requests: REQUESTS, coreRuns: CORE_RUNS, skipApi: SKIP_API },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures: { core: coreResult.figures, api: apiResult.figures },
  });
  const out = [
    '',
    `Client groups: ${CLIENTS} clients, 100 groups (load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(['figure', 'value'], [...coreResult.rows, ...apiResult.rows]),
    '',
    checksTable(checks),
    '',
    `results written to ${file}`,
    '',
  ];
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
