/** A real svc agent for end-to-end tests: its config file written in the test's folder, started, connected. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SVC_BIN, startProcess, type RunningProcess } from './process.js';

/** Filters that let an agent run shell loops and pipes (deny first; one word stays refused). */
export const SHELL_FRIENDLY_FILTERS = [
  '[remote-commands]',
  'order = ["deny", "allow"]',
  "deny = ['forbidden']",
  "allow = ['^$']",
];

/** Back soon after svcd restarts (the default backoff grows to minutes). */
export const QUICK_RECONNECT = ['[connection]', 'max_retry_interval = "2s"'];

export interface E2eAgent {
  /** The folder its config file and data folder (`<id>-data`) go in. */
  dir: string;
  /** svcd's agent URL, e.g. `http://127.0.0.1:<port>`. */
  server: string;
  fingerprint: string;
  id: string;
  /** `id:password` of a client credential svcd knows. */
  auth?: string;
  /** More lines after the [client] basics: more [client] keys first, then other sections. */
  lines?: string[];
  /** How long it may take to connect (default 20 s). */
  timeoutMs?: number;
}

/** Writes `<dir>/<id>.conf`, starts the agent and resolves once it is connected. */
export async function startE2eAgent(agent: E2eAgent): Promise<RunningProcess> {
  const conf = join(agent.dir, `${agent.id}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "${agent.server}"`,
      `auth = "${agent.auth ?? 'agent:agent-password-1'}"`,
      `id = "${agent.id}"`,
      `fingerprint = "${agent.fingerprint}"`,
      `data_dir = "${agent.id}-data"`,
      ...(agent.lines ?? []),
    ].join('\n'),
  );
  const proc = startProcess(SVC_BIN, ['-c', conf], { env: { SVC_AUTH: undefined } });
  try {
    await proc.waitForLog('connected to svcd', agent.timeoutMs);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
