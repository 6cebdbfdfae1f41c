import { connectClient, type HelloOverrides, type TestAgent } from '../../../../test-support/agent-client.js';
import { jobEnd, openOutput } from '../../../../test-support/job-output.js';
import { ControlError } from '../../../platform/src/control-peer.js';
import type { JobEnd, JobRun } from '../../../protocol/src/index.js';
import type { GatewayServer } from '../gateway/helpers.js';

/** Re-exported for the API tests that write job output themselves. */
export { jobEnd, openOutput };

export type Output = { stdout?: Buffer; stderr?: Buffer; end?: Partial<JobEnd> };

/** What a test agent does with a job.run: refuse it, or start it and (later) send this result. */
export type Behaviour = (job: JobRun) =>
  | { refuse: string }
  | {
      result: Output | Promise<Output>;
      /** job.run is answered once it settles. */ startedAfter?: Promise<unknown>;
    };

export interface JobAgent {
  id: string;
  agent: TestAgent;
  /** Every job.run this agent received. */
  runs: JobRun[];
  /** Replaced per test; default: exit 0 with "<id> ran <command>" on stdout. */
  behaviour: Behaviour;
}

export const succeed: Behaviour = () => ({ result: {} });

export async function sendResult(agent: TestAgent, jid: string, output: Output): Promise<void> {
  const out = await openOutput(agent, jid);
  if (output.stdout) out.write('stdout', output.stdout);
  if (output.stderr) out.write('stderr', output.stderr);
  await out.end(output.end);
}

/** startJobAgent's way into an in-process test server whose client credentials hold agents-a / secret-a-123. */
export const agentsOf = (t: {
  server: { clientPort: number; fingerprint: string };
}): Pick<GatewayServer, 'agent'> => ({
  agent: () => ({
    url: `ws://127.0.0.1:${t.server.clientPort}`,
    authId: 'agents-a',
    password: 'secret-a-123',
    fingerprint: t.server.fingerprint,
  }),
});

/** A connected test agent that answers job.run per its behaviour and sends results on its own channel. */
export async function startJobAgent(
  t: Pick<GatewayServer, 'agent'>,
  id: string,
  hello: HelloOverrides = {},
): Promise<JobAgent> {
  const agent = await connectClient(t.agent('agents-a'), { client_id: id, name: `Name ${id}`, ...hello });
  const handle: JobAgent = { id, agent, runs: [], behaviour: succeed };
  agent.peer.on('job.run', async (job) => {
    handle.runs.push(job);
    const answer = handle.behaviour(job);
    if ('refuse' in answer) throw new ControlError('refused', answer.refuse);
    await answer.startedAfter;
    void Promise.resolve(answer.result)
      .then((output) =>
        sendResult(agent, job.jid, { stdout: Buffer.from(`${id} ran ${job.command}\n`), ...output }),
      )
      .catch(() => undefined);
    return { pid: 100, started_at: new Date().toISOString() };
  });
  return handle;
}
