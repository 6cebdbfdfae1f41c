/**
 * An agent in the test process speaking the real link (WebSocket, SSH, control channel, job output channel) that
 * runs each job as the test plans it: answered at once or when a gate opens, finished at once or after live
 * output. For tests that need to hold a job at a chosen step, which a real svc agent cannot be told to do.
 *
 *   const agent = await connectLinkAgent(cluster.link(node), 'b1');
 *   const finish = gate();
 *   agent.plan = () => ({ finishAfter: finish.opened });
 */
import type { JobRun } from '../packages/protocol/src/index.js';
import { connectClient, type AgentLinkOptions, type TestAgent } from './agent-client.js';
import { openOutput } from './job-output.js';

/** How the agent handles one job.run; each promise is awaited before that step. */
export interface JobPlan {
  /** The agent answers job.run (started) once this settles; default at once. */
  answerAfter?: Promise<unknown>;
  /** Until this settles the job writes a line every TICK_MS (live output); default: it ends at once. */
  finishAfter?: Promise<unknown>;
}

/** A running job writes a line this often while it waits to finish. */
const TICK_MS = 100;
/** The most lines a waiting job writes (a bound on a test that forgets to let it finish). */
const MAX_TICKS = 600;

export interface LinkAgent {
  id: string;
  link: TestAgent;
  /** Every job.run received, in order. */
  runs: JobRun[];
  /** Decides each job's plan; default: answer and finish at once. */
  plan: (job: JobRun) => JobPlan;
  /** Resolves once `count` job.run requests have arrived; rejects after `withinMs` (20 s). */
  received(count: number, withinMs?: number): Promise<void>;
}

/** Client `clientId` connected through `options`; its jobs succeed with `<id> ran <command>` on stdout. */
export async function connectLinkAgent(options: AgentLinkOptions, clientId: string): Promise<LinkAgent> {
  const link = await connectClient(options, { client_id: clientId, name: `name of ${clientId}` });
  const waiters: (() => void)[] = [];
  const agent: LinkAgent = {
    id: clientId,
    link,
    runs: [],
    plan: () => ({}),
    received: async (count, withinMs = 20_000) => {
      const deadline = Date.now() + withinMs;
      while (agent.runs.length < count) {
        if (Date.now() > deadline)
          throw new Error(
            `agent ${clientId}: ${agent.runs.length} job.run requests, not ${count}, within ${withinMs} ms`,
          );
        await Promise.race([
          new Promise<void>((wake) => waiters.push(wake)),
          new Promise((wake) => setTimeout(wake, 1_000)),
        ]);
      }
    },
  };
  link.peer.on('job.run', async (job) => {
    agent.runs.push(job);
    for (const wake of waiters.splice(0)) wake();
    const plan = agent.plan(job);
    await plan.answerAfter;
    void runJob(agent, job, plan).catch(() => undefined);
    return { pid: 4000 + agent.runs.length, started_at: new Date().toISOString() };
  });
  return agent;
}

/** The job's output on its own channel: ticks while its plan holds it, then its line and a successful end. */
async function runJob(agent: LinkAgent, job: JobRun, plan: JobPlan): Promise<void> {
  const output = await openOutput(agent.link, job.jid);
  const say = (text: string) => output.write('stdout', Buffer.from(text));
  if (plan.finishAfter) {
    let finished = false;
    void plan.finishAfter.finally(() => (finished = true));
    for (let tick = 0; !finished && tick < MAX_TICKS; tick += 1) {
      say(`${agent.id} tick ${tick}\n`);
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
  }
  say(`${agent.id} ran ${job.command}\n`);
  await output.end();
}

/** A promise the test settles when it wants (a gate for an agent's step). */
export function gate(): { opened: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
