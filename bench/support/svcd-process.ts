/**
 * The built svcd as a child process for the load benchmarks: a generated config (agent listener and API on fixed
 * free loopback ports, so a restarted svcd is found at the same address; SQLite in a temporary data dir; one client
 * credential; a static admin), start, SIGKILL, restart, and its RSS from /proc.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ApiClient } from './api-client.js';
import { children, freePort, HOST, startChild, type Managed } from './child-processes.js';
import { processCpuMs } from './proc-stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SVCD_BIN = join(ROOT, 'packages/server/bin/svcd.js');
const SVCD_MAIN = join(ROOT, 'packages/server/dist/main.js');
export const STARTUP_TIMEOUT_MS = 60_000;
const START_ATTEMPTS = 3;

export const CLIENT_AUTH = { id: 'bench-sim', password: 'bench-sim-pass-1234' };
export const API_USER = { name: 'admin', password: 'bench-admin-1234' };

export interface SvcdOptions {
  workDir: string;
  /** `[server] max_concurrent_ssh_handshakes`; 0 = svcd's default (half the CPUs). */
  maxHandshakes: number;
  /** Extra node flags, e.g. --heapsnapshot-signal=SIGUSR2. */
  nodeArgs: string[];
  /** Serve the Prometheus metrics (`[api] metrics_address`) on a free loopback port. */
  metrics?: boolean;
  /** Name in error messages (default `svcd`), e.g. a cluster node's id. */
  name?: string;
  /** More config: lines for `[server]` and `[api]`, and whole sections (`[database]`, `[cluster]`) after them. */
  serverLines?: string[];
  apiLines?: string[];
  sections?: string[];
}

const tomlString = (value: string) => JSON.stringify(value);

export class SvcdProcess {
  child: Managed | undefined;
  agentPort = 0;
  apiPort = 0;
  /** 0 when the metrics are off. */
  metricsPort = 0;
  private readonly configPath: string;

  constructor(private readonly options: SvcdOptions) {
    this.configPath = join(options.workDir, 'svcd.conf');
  }

  get agentUrl(): string {
    return `ws://${HOST}:${this.agentPort}`;
  }

  get apiBase(): string {
    return `http://${HOST}:${this.apiPort}/api/v1`;
  }

  /** URL of GET /metrics (with `metrics`). */
  get metricsUrl(): string {
    return `http://${HOST}:${this.metricsPort}/metrics`;
  }

  get pid(): number | undefined {
    return this.child?.proc.pid;
  }

  /** First start, on new free ports (retried when a port got taken in between). */
  async start(): Promise<void> {
    if (!existsSync(SVCD_MAIN)) throw new Error(`${SVCD_MAIN} is missing: run npm run build first`);
    for (let attempt = 1; ; attempt++) {
      this.agentPort = await freePort();
      this.apiPort = await freePort();
      if (this.options.metrics) this.metricsPort = await freePort();
      await this.writeConfig();
      try {
        await this.launch();
        return;
      } catch (err) {
        const taken = /EADDRINUSE|already in use/.test(this.child?.tail() ?? '');
        await this.stop();
        if (!taken || attempt >= START_ATTEMPTS) throw err;
        process.stderr.write('bench: a port was taken before svcd could bind it; retrying\n');
      }
    }
  }

  /** Starts svcd again with the same config, ports and data; resolves once the API answers. */
  restart(): Promise<void> {
    return this.launch();
  }

  /** SIGKILL, as a crash would; resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child?.running) return;
    child.proc.kill('SIGKILL');
    await Promise.race([child.exited, sleep(10_000)]);
    children.delete(child);
  }

  /** SIGTERM, then SIGKILL after `graceMs` (Managed.stop). */
  async stop(graceMs?: number): Promise<void> {
    const child = this.child;
    if (!child) return;
    await child.stop(graceMs);
    children.delete(child);
  }

  /** VmRSS of svcd in KiB. */
  rssKiB(): number {
    const text = readFileSync(`/proc/${this.pid ?? 0}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+) kB/m.exec(text);
    if (!match) throw new Error(`no VmRSS in /proc/${this.pid ?? 0}/status`);
    return Number(match[1]);
  }

  /** CPU time (user + system) svcd has used so far, in ms. */
  cpuMs(): number {
    const ms = processCpuMs(this.pid);
    if (ms === undefined) throw new Error(`cannot read the CPU time of svcd (pid ${this.pid ?? '-'})`);
    return ms;
  }

  private async writeConfig(): Promise<void> {
    const config = [
      '[server]',
      `address = ${tomlString(`${HOST}:${this.agentPort}`)}`,
      `data_dir = ${tomlString(join(this.options.workDir, 'svcd-data'))}`,
      `auth = ${tomlString(`${CLIENT_AUTH.id}:${CLIENT_AUTH.password}`)}`,
      `max_concurrent_ssh_handshakes = ${this.options.maxHandshakes}`,
      ...(this.options.serverLines ?? []),
      '[api]',
      `address = ${tomlString(`${HOST}:${this.apiPort}`)}`,
      `auth = ${tomlString(`${API_USER.name}:${API_USER.password}`)}`,
      ...(this.metricsPort ? [`metrics_address = ${tomlString(`${HOST}:${this.metricsPort}`)}`] : []),
      ...(this.options.apiLines ?? []),
      ...(this.options.sections ?? []),
      '[logging]',
      'log_level = "warn"',
      '',
    ].join('\n');
    await writeFile(this.configPath, config, { mode: 0o600 });
  }

  private async launch(): Promise<void> {
    const args = [...this.options.nodeArgs, SVCD_BIN, '-c', this.configPath];
    const child = startChild(this.options.name ?? 'svcd', process.execPath, args, {
      cwd: this.options.workDir,
    });
    this.child = child;
    await waitForApi(this.apiBase, child);
  }
}

/** Polls GET /status (any HTTP answer counts, 401 included) every 20 ms, at most STARTUP_TIMEOUT_MS. */
export async function waitForApi(apiBase: string, child: Managed): Promise<void> {
  const api = new ApiClient(apiBase, 1);
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  try {
    while (Date.now() < deadline) {
      if (!child.running)
        throw new Error(`svcd stopped before answering (${child.describeExit()}):\n${child.tail()}`);
      try {
        await api.get('/status');
        return;
      } catch {
        await sleep(20);
      }
    }
  } finally {
    api.close();
  }
  throw new Error(`svcd did not answer within ${STARTUP_TIMEOUT_MS} ms:\n${child.tail()}`);
}
