/**
 * Child processes, ports and settings shared by the benchmarks: every child is kept in one registry so it is
 * always stopped at the end, even when a bench dies without running its own cleanup.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

export const HOST = '127.0.0.1';
export const STOP_TIMEOUT_MS = 5_000;

/** A whole number from the environment, between 1 and `max`; anything else stops the bench with a message. */
export function envNumber(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0 || value > max) {
    process.stderr.write(
      `bench: ${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(raw)}\n`,
    );
    process.exit(2);
  }
  return value;
}

/** A child process whose output is kept (last 16 KB) for error messages, and which is always stopped at the end. */
export class Managed {
  readonly exited: Promise<void>;
  private output = '';

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-16_384);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    this.exited = new Promise((done) => proc.once('exit', () => done()));
    proc.once('error', (err) => {
      this.output += `\n[spawn error] ${err.message}`;
    });
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null && this.proc.pid !== undefined;
  }

  describeExit(): string {
    return `exit code ${this.proc.exitCode ?? '-'}, signal ${this.proc.signalCode ?? '-'}`;
  }

  tail(): string {
    return this.output.trim() ? this.output.trim() : '(no output)';
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = STOP_TIMEOUT_MS): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGTERM');
    const timedOut = Symbol('timeout');
    const outcome = await Promise.race([this.exited, sleep(graceMs, timedOut, { ref: false })]);
    if (outcome === timedOut && this.running) {
      process.stderr.write(`bench: ${this.name} ignored SIGTERM for ${graceMs} ms; sending SIGKILL\n`);
      this.proc.kill('SIGKILL');
      await Promise.race([this.exited, sleep(STOP_TIMEOUT_MS, undefined, { ref: false })]);
    }
  }
}

/** Every child a bench started and has not stopped yet. */
export const children = new Set<Managed>();

export function startChild(
  name: string,
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; stdin?: boolean },
): Managed {
  const proc = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  const child = new Managed(name, proc);
  children.add(child);
  return child;
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((child) => child.stop()));
  children.clear();
}

// Last resort if the bench dies without running its cleanup: never leave a server behind.
process.on('exit', () => {
  for (const child of children) if (child.running) child.proc.kill('SIGKILL');
});

export /** A port that was free a moment ago (listen on 0, read it, close); callers retry if it gets taken. */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? done(port) : fail(new Error('could not read a free port'))));
    });
  });
}

/** Waits (at most `timeoutMs`) for the child's first stdout line, `{"port": N}`, and returns N. */
export async function readPrintedPort(child: Managed, timeoutMs: number): Promise<number> {
  const stdout = child.proc.stdout;
  if (!stdout) throw new Error(`${child.name} has no stdout`);
  const lines = createInterface({ input: stdout });
  try {
    return await new Promise<number>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`${child.name} did not start within ${timeoutMs} ms:\n${child.tail()}`)),
        timeoutMs,
      );
      lines.once('line', (line) => {
        clearTimeout(timer);
        let parsed: { port?: unknown } = {};
        try {
          parsed = JSON.parse(line) as { port?: unknown };
        } catch {
          // reported just below
        }
        if (typeof parsed.port === 'number') done(parsed.port);
        else fail(new Error(`${child.name} printed ${JSON.stringify(line)} instead of its port`));
      });
      void child.exited.then(() => {
        clearTimeout(timer);
        fail(new Error(`${child.name} stopped (${child.describeExit()}):\n${child.tail()}`));
      });
    });
  } finally {
    lines.close();
  }
}
