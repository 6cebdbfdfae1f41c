/**
 * What the cluster end-to-end tests ask of a node's API and wait for (cluster-harness.ts starts the nodes). Other
 * nodes' changes arrive without an event the API offers, so waits poll, bounded.
 */
import { expect } from 'vitest';
import type { ApiClient } from './api-client.js';
import { E2E_ADMIN } from './e2e-setup.js';

export const ADMIN = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] as [string, string] };

/** Polls (bounded) until `check` passes; the error names what was awaited and the last value read. */
export async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  withinMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} not reached within ${withinMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Reads for `forMs` and fails as soon as `check` does not hold: a state that must last, not one to wait for. */
export async function holds<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  forMs: number,
): Promise<void> {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    const value = await read();
    if (!check(value)) throw new Error(`${what} did not hold: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `connection_state` of every client, by id, as the node answering `api` lists them. */
export async function clientStates(api: ApiClient): Promise<Record<string, string>> {
  const res = await api.get('/clients?fields[clients]=id,connection_state', { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  const data = res.json.data as { id: string; connection_state: string }[];
  return Object.fromEntries(data.map((c) => [c.id, c.connection_state]));
}

/** Starts a command on a client; resolves with its job id. */
export async function runCommand(api: ApiClient, clientId: string, command: string): Promise<string> {
  const res = await api.post(`/clients/${clientId}/commands`, { command }, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

export interface JobView {
  status: string;
  error: string;
  started_at: string | null;
  result: { stdout: string };
}

export async function jobOf(api: ApiClient, clientId: string, jid: string): Promise<JobView> {
  const res = await api.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as JobView;
}

/** The job once it is no longer running. */
export const finished = (api: ApiClient, clientId: string, jid: string, withinMs?: number) =>
  eventually(
    `job ${jid} on ${clientId}`,
    () => jobOf(api, clientId, jid),
    (job) => job.status !== 'running',
    withinMs,
  );

/** Runs `echo <text>` on the client through `api` and expects it to succeed with that output. */
export async function echoes(api: ApiClient, clientId: string, text: string): Promise<void> {
  const jid = await runCommand(api, clientId, `/usr/bin/echo ${text}`);
  expect(await finished(api, clientId, jid)).toMatchObject({
    status: 'successful',
    result: { stdout: `${text}\n` },
  });
}

export interface RunView {
  status: string;
  finished_at: string | null;
  jobs: { client_id: string; status: string; error: string; result: { stdout: string } }[];
}

export async function runOf(api: ApiClient, jid: string): Promise<RunView> {
  const res = await api.get(`/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as RunView;
}

/** A multi-client run once it is no longer running. */
export const finishedRun = (api: ApiClient, jid: string, withinMs?: number): Promise<RunView> =>
  eventually(
    `run ${jid}`,
    () => runOf(api, jid),
    (run) => run.status !== 'running',
    withinMs,
  );
