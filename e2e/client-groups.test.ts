/**
 * Client groups with real processes: one svcd and two svc agents. A group defined by tags and labels lists its
 * members; an agent restarted with other --tag flags moves out of the group and back in, and GET /clients
 * filters on the group.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startE2eSvcd } from '../test-support/e2e-setup.js';
import type { ApiClient } from '../test-support/api-client.js';
import { SVC_BIN, freePort, startProcess, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const CREDENTIALS = { 'agent-a': 'password-a-1', 'agent-b': 'password-b-1' };

let dir: string;
let clientUrl: string;
let fingerprint: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
const agents = new Map<string, RunningProcess>();

interface GroupData {
  client_ids: string[];
  num_clients: number;
  num_clients_connected: number;
}

/** Starts (or restarts) agent `id` with these tags; waits until svcd lists it connected with them. */
async function runAgent(id: 'a-1' | 'b-1', tags: string[], labels: string[]): Promise<void> {
  await agents.get(id)?.stop();
  const authId = id === 'a-1' ? 'agent-a' : 'agent-b';
  const proc = startProcess(SVC_BIN, [
    ...['--auth', `${authId}:${CREDENTIALS[authId]}`, '--id', id, '--fingerprint', fingerprint],
    ...tags.flatMap((t) => ['--tag', t]),
    ...labels.flatMap((l) => ['--label', l]),
    ...['--data-dir', join(dir, id), clientUrl],
  ]);
  agents.set(id, proc);
  await waitFor(
    async () => {
      const res = await api.get(`/clients/${id}`, { auth: ADMIN });
      const record = res.json?.data as { connection_state?: string; tags?: string[] } | undefined;
      return record?.connection_state === 'connected' && JSON.stringify(record.tags) === JSON.stringify(tags);
    },
    `${id} connected with tags ${tags.join(',')}`,
  );
}

async function waitFor(check: () => Promise<boolean>, what: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function group(id: string): Promise<GroupData> {
  const res = await api.get(`/client-groups/${id}`, { auth: ADMIN });
  expect(res.status).toBe(200);
  return res.json.data as GroupData;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-groups-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  clientUrl = `http://127.0.0.1:${clientPort}`;
  await writeFile(join(dir, 'clients-auth.json'), JSON.stringify(CREDENTIALS));
  ({ svcd, api, fingerprint } = await startE2eSvcd(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-groups-seed',
    server: ['auth_file = "clients-auth.json"', 'keepalive_interval = "2s"'],
  }));
  await runAgent('a-1', ['web', 'eu'], ['env:prod']);
  await runAgent('b-1', ['db', 'eu'], ['env : staging']);
}, 60_000);

afterAll(async () => {
  for (const proc of agents.values()) await proc.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('client groups with real agents', () => {
  test('members follow the agents: restarted with other tags, one moves into the group and one out', async () => {
    const created = await api.post(
      '/client-groups',
      { id: 'eu-web', description: 'EU web servers', params: { tag: { and: ['EU', 'web*'] } } },
      { auth: ADMIN },
    );
    expect(created.status).toBe(201);
    expect(created.json.data.client_ids).toEqual(['a-1']);
    const staging = await api.post(
      '/client-groups',
      { id: 'staging', params: { label: ['ENV:stag*'] } },
      { auth: ADMIN },
    );
    expect(staging.json.data.client_ids).toEqual(['b-1']);

    await runAgent('b-1', ['web-db', 'eu'], ['env:staging']);
    expect(await group('eu-web')).toEqual(
      expect.objectContaining({ client_ids: ['a-1', 'b-1'], num_clients: 2, num_clients_connected: 2 }),
    );
    const filtered = await api.get('/clients?filter[groups]=eu-web&fields[clients]=id,groups', {
      auth: ADMIN,
    });
    expect(filtered.json).toEqual({
      data: [
        { id: 'a-1', groups: ['eu-web'] },
        { id: 'b-1', groups: ['eu-web', 'staging'] },
      ],
      meta: { count: 2 },
    });

    await runAgent('a-1', ['mail', 'eu'], ['env:prod']);
    expect((await group('eu-web')).client_ids).toEqual(['b-1']);

    // A stopped agent stays a member (svcd still knows it), counted as not connected.
    await agents.get('b-1')?.stop();
    agents.delete('b-1');
    await waitFor(async () => (await group('eu-web')).num_clients_connected === 0, 'b-1 disconnected');
    expect(await group('eu-web')).toEqual(
      expect.objectContaining({ client_ids: ['b-1'], num_clients: 1, num_clients_connected: 0 }),
    );
  }, 90_000);
});
