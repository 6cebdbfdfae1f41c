import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';

export const SVCD_BIN = fileURLToPath(new URL('../packages/server/bin/svcd.js', import.meta.url));
export const SVC_BIN = fileURLToPath(new URL('../packages/agent/bin/svc.js', import.meta.url));

export interface LogLine {
  msg?: string;
  level?: number;
  [key: string]: unknown;
}

/** Stdout lines a timed-out wait shows: what the process was doing instead. */
const STDOUT_TAIL_LINES = 30;

/** A real child process whose stdout lines are kept and can be awaited. */
export class RunningProcess {
  readonly stdoutLines: string[] = [];
  stderr = '';
  private waiters: { match: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  /** Each returns true once it is satisfied and can be dropped. */
  private stderrWaiters: ((stderr: string) => boolean)[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly child: ChildProcess) {
    let buffer = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        this.stdoutLines.push(line);
        this.waiters = this.waiters.filter((w) => {
          if (!w.match(line)) return true;
          w.resolve(line);
          return false;
        });
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      this.stderrWaiters = this.stderrWaiters.filter((w) => !w(this.stderr));
    });
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Resolves with the first stdout line (past or future) that matches; rejects on exit or timeout. */
  waitForLine(match: (line: string) => boolean, timeoutMs = 20_000): Promise<string> {
    const seen = this.stdoutLines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no matching output within ${timeoutMs} ms; last stdout lines:\n${this.stdoutLines.slice(-STDOUT_TAIL_LINES).join('\n')}\nstderr: ${this.stderr}`,
            ),
          ),
        timeoutMs,
      );
      void this.exited.then(({ code }) => {
        clearTimeout(timer);
        reject(new Error(`process exited (${code}) before the expected output; stderr: ${this.stderr}`));
      });
      this.waiters.push({
        match,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  /** Resolves once stderr (so far or later) contains `text`; rejects after the timeout. */
  waitForStderr(text: string, timeoutMs = 20_000): Promise<void> {
    if (this.stderr.includes(text)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`stderr did not show ${JSON.stringify(text)} within ${timeoutMs} ms: ${this.stderr}`),
          ),
        timeoutMs,
      );
      this.stderrWaiters.push((stderr) => {
        if (!stderr.includes(text)) return false;
        clearTimeout(timer);
        resolve();
        return true;
      });
    });
  }

  waitForLog(msg: string, timeoutMs?: number): Promise<LogLine> {
    return this.waitForLine((line) => parseLog(line)?.msg === msg, timeoutMs).then((l) => parseLog(l) ?? {});
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

export function parseLog(line: string): LogLine | undefined {
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return undefined;
  }
}

export interface ProcessOptions {
  cwd?: string;
  stdin?: string;
  /** Added to (or, with undefined values, removed from) this process's environment. */
  env?: Record<string, string | undefined>;
}

export function startProcess(bin: string, args: string[], options: ProcessOptions = {}) {
  return startExecutable(process.execPath, [bin, ...args], options);
}

/** Starts `file` itself (not through node), e.g. the one-file agent. */
export function startExecutable(file: string, args: string[], options: ProcessOptions = {}) {
  const env: Record<string, string | undefined> = { ...process.env, NODE_ENV: 'test', ...options.env };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  const child = spawn(file, args, {
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
    env,
  });
  if (options.stdin !== undefined) child.stdin.end(options.stdin);
  return new RunningProcess(child);
}

/** Runs a command to completion and returns its output and exit code. */
export async function runProcess(
  bin: string,
  args: string[],
  options: { cwd?: string; stdin?: string } = {},
) {
  const proc = startProcess(bin, args, { stdin: '', ...options });
  const { code } = await proc.exited;
  return { code, stdout: proc.stdoutLines.join('\n'), stderr: proc.stderr };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A free block of `count` consecutive ports between 21000 and 29000 (bindable on 0.0.0.0). */
export async function freePortBlock(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 21000 + Math.floor(Math.random() * 8000);
    const servers: Server[] = [];
    let ok = true;
    for (let port = base; port < base + count && ok; port++) {
      const server = createServer();
      ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false));
        server.listen({ port, host: '0.0.0.0', exclusive: true }, () => resolve(true));
      });
      if (ok) servers.push(server);
    }
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    if (ok) return base;
  }
  throw new Error('no free port block found');
}
