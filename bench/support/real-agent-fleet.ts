/**
 * Real svc agents for the load benchmarks: one `node packages/agent/bin/svc.js` process per agent, each with its
 * own data folder and client id, started a few at a time; every process is stopped at clean-up.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild, type Managed } from './child-processes.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SVC_BIN = join(ROOT, 'packages/agent/bin/svc.js');
/** Time one agent may take from spawn to "connected to svcd" (many start at once on two shared cores). */
const CONNECT_TIMEOUT_MS = 120_000;

export interface RealAgentOptions {
  /** ws://host:port of svcd's agent listener. */
  url: string;
  authId: string;
  password: string;
  fingerprint: string;
  /** Each agent's data folder is `<workDir>/<client id>`. */
  workDir: string;
  /** Client ids are `<idPrefix><n>`. */
  idPrefix: string;
  /** Agents starting (spawned, not yet connected) at once. */
  startConcurrency: number;
  /** node's own options before the agent's script (e.g. --cpu-prof); none by default. */
  nodeArgs?: string[];
  /** The agents' --log-level; info by default. */
  logLevel?: string;
}

/** Resolves once the agent logs that svcd accepted its hello; rejects if it exits or times out first. */
function connected(agent: Managed): Promise<void> {
  const stdout = agent.proc.stdout;
  if (!stdout) return Promise.reject(new Error(`${agent.name} has no stdout`));
  return new Promise((done, fail) => {
    let seen = '';
    const timer = setTimeout(() => {
      fail(new Error(`${agent.name} did not connect within ${CONNECT_TIMEOUT_MS} ms:\n${agent.tail()}`));
    }, CONNECT_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString('utf8')).slice(-4096);
      if (!seen.includes('"connected to svcd"')) return;
      clearTimeout(timer);
      stdout.off('data', onData);
      done();
    };
    stdout.on('data', onData);
    void agent.exited.then(() => {
      clearTimeout(timer);
      fail(new Error(`${agent.name} stopped (${agent.describeExit()}):\n${agent.tail()}`));
    });
  });
}

export class RealAgentFleet {
  readonly agents: Managed[] = [];

  constructor(private readonly options: RealAgentOptions) {}

  get size(): number {
    return this.agents.length;
  }

  /** Starts agents until `total` are running, at most `startConcurrency` connecting at once; resolves once all are connected. */
  async growTo(total: number): Promise<void> {
    let next = this.agents.length;
    const startOne = async () => {
      while (next < total) {
        const n = next++;
        const id = `${this.options.idPrefix}${String(n).padStart(4, '0')}`;
        const dataDir = join(this.options.workDir, id);
        await mkdir(dataDir, { recursive: true });
        const { authId, password, fingerprint, url } = this.options;
        const args = [
          ...(this.options.nodeArgs ?? []),
          ...[SVC_BIN, '--auth', `${authId}:${password}`, '--id', id, '--fingerprint', fingerprint],
          ...['--data-dir', dataDir, '--log-level', this.options.logLevel ?? 'info', url],
        ];
        const env = { ...process.env, SVC_AUTH: undefined, NODE_OPTIONS: undefined, NODE_ENV: undefined };
        const agent = startChild(`agent ${id}`, process.execPath, args, { cwd: dataDir, env });
        this.agents.push(agent);
        await connected(agent);
      }
    };
    await Promise.all(Array.from({ length: this.options.startConcurrency }, startOne));
  }

  /** Agents that have exited (should be 0 while they are held). */
  get exited(): number {
    return this.agents.filter((a) => !a.running).length;
  }

  async stop(): Promise<void> {
    await Promise.all(this.agents.map((a) => a.stop()));
  }
}
