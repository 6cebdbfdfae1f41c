/**
 * A reconnecting agent's hello lists the jobs it still has (real svcd in this process, test agents over real
 * sockets): jobs it started and no longer lists end `unknown` with the reason, listed ones stay running and take
 * the replayed result, and an agent that sends no list (older agents) leaves its jobs to their deadline.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { AUTH, startGatewayServer, waitFor, type GatewayServer } from '../gateway/helpers.js';
import { sendResult, startJobAgent, type JobAgent } from './job-agents.js';

let t: GatewayServer;
let agent: JobAgent | undefined;

beforeAll(async () => {
  t = await startGatewayServer();
});
afterAll(async () => {
  await agent?.agent.close();
  await t?.stop();
});

interface JobView {
  status: string;
  error: string;
  exit_code: number | null;
  result: { stdout: string };
}

const job = async (jid: string): Promise<JobView> =>
  (await t.api.get(`/clients/keeper/commands/${jid}`, { auth: AUTH })).json.data as JobView;

/** Starts a job the test agent accepts and never finishes; resolves with its jid once it shows running. */
async function startedJob(): Promise<string> {
  const res = await t.api.post('/clients/keeper/commands', { command: '/usr/bin/sleep 600' }, { auth: AUTH });
  expect(res.status, res.text).toBe(200);
  const jid = res.json.data.jid as string;
  expect(await job(jid)).toMatchObject({ status: 'running', pid: 100 });
  return jid;
}

test('jobs the reconnected agent does not list end unknown; a listed one takes its replayed result', async () => {
  agent = await startJobAgent(t, 'keeper');
  agent.behaviour = () => ({ result: new Promise(() => undefined) });
  const lost = await startedJob();
  const kept = await startedJob();
  await agent.agent.close();

  // An agent that does not say what it has (older svc) changes nothing.
  agent = await startJobAgent(t, 'keeper');
  await agent.agent.close();
  expect((await job(lost)).status).toBe('running');

  agent = await startJobAgent(t, 'keeper', { jobs: [kept] });
  const ended = await waitFor(async (): Promise<JobView | undefined> => {
    const view = await job(lost);
    return view.status === 'running' ? undefined : view;
  });
  expect(ended).toMatchObject({ status: 'unknown', exit_code: null });
  expect(ended.error).toMatch(/reconnected without this job/);
  expect((await job(kept)).status).toBe('running');

  await sendResult(agent.agent, kept, { stdout: Buffer.from('kept\n') });
  expect(await job(kept)).toMatchObject({ status: 'successful', result: { stdout: 'kept\n' } });
});
