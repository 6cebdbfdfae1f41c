import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import type * as NativeSpawnAddon from '@svc/native-spawn';
import type { Invocation } from './invocation.js';

/**
 * A running job process as job-process.ts uses it: the subset of node's ChildProcess that both ways of starting one
 * provide. Events: 'spawn', 'error' (err), 'exit' (code, signal), 'close' once stdout and stderr have ended too.
 */
export interface JobChild extends EventEmitter {
  readonly pid: number | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  once(event: 'spawn', listener: () => void): this;
  once(event: 'error', listener: (err: Error) => void): this;
  once(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

export interface JobChildSpec {
  invocation: Invocation;
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

type NativeSpawn = NonNullable<typeof NativeSpawnAddon.spawn>;

let loading: Promise<NativeSpawn | null> | undefined;

/**
 * Loads @svc/native-spawn once: null where it is not built (not Linux, no compiler at install, the one-file agent).
 * The agent bundle is CommonJS: require() there, since import() would start node's ES module loader for one addon.
 */
function loadNativeSpawn(): Promise<NativeSpawn | null> {
  type Addon = Partial<typeof NativeSpawnAddon>;
  const load: () => Promise<Addon & { default?: Addon }> =
    typeof require === 'function'
      ? // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
        () => Promise.resolve().then(() => require('@svc/native-spawn') as Addon)
      : () => import('@svc/native-spawn');
  loading ??= load().then(
    (module) => (module.default ?? module).spawn ?? null,
    () => null,
  );
  return loading;
}

/** Which way jobs start here: 'posix_spawn' through the addon, or node's 'child_process'. */
export async function jobSpawnMethod(): Promise<'posix_spawn' | 'child_process'> {
  return (await loadNativeSpawn()) ? 'posix_spawn' : 'child_process';
}

/**
 * Starts the job's program: stdin from /dev/null, stdout and stderr piped, leading its own process group outside
 * Windows. With @svc/native-spawn (an absolute program path on Linux) through posix_spawn, which does not copy the
 * agent's page tables as node's fork does: about a tenth of the agent's CPU per started process (see the addon).
 * `preferNode` forces node's child_process (tests of both ways).
 */
export async function startJobChild(spec: JobChildSpec, preferNode = false): Promise<JobChild> {
  const addon = preferNode ? null : await loadNativeSpawn();
  const { invocation } = spec;
  if (!addon || !invocation.file.startsWith('/')) {
    return spawn(invocation.file, invocation.args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
      windowsVerbatimArguments: invocation.windowsVerbatimArguments,
      detached: process.platform !== 'win32',
    }) as JobChild;
  }
  return new NativeJobChild(addon, spec);
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(constants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

/** A process started by posix_spawn, shaped like node's ChildProcess for job-process.ts. */
class NativeJobChild extends EventEmitter implements JobChild {
  pid: number | undefined;
  readonly stdout: Socket;
  readonly stderr: Socket;

  constructor(addon: NativeSpawn, { invocation, cwd, env = process.env }: JobChildSpec) {
    super();
    const environment = Object.entries(env)
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([name, value]) => `${name}=${value}`);
    let fds: [number, number, number];
    try {
      fds = addon(invocation.file, [invocation.file, ...invocation.args], environment, cwd, (code, signal) =>
        this.exited(code, signal),
      );
    } catch (err) {
      // Node's spawn reports a failed start asynchronously, as `spawn <file> <code>`; so does this.
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      const failure = Object.assign(new Error(`spawn ${invocation.file} ${code}`), {
        code,
        syscall: `spawn ${invocation.file}`,
        path: invocation.file,
      });
      this.stdout = endedSocket();
      this.stderr = endedSocket();
      process.nextTick(() => this.emit('error', failure));
      return;
    }
    const [pid, stdoutFd, stderrFd] = fds;
    this.pid = pid;
    this.stdout = new Socket({ fd: stdoutFd, readable: true, writable: false });
    this.stderr = new Socket({ fd: stderrFd, readable: true, writable: false });
    // A read error ends that stream; the exit is still reported.
    for (const socket of [this.stdout, this.stderr]) socket.on('error', () => socket.destroy());
    process.nextTick(() => this.emit('spawn'));
  }

  private exited(code: number, signal: number): void {
    const signalName = signal === 0 ? null : (SIGNAL_NAMES.get(signal) ?? null);
    this.emit('exit', code < 0 ? null : code, signalName);
    void Promise.all([closed(this.stdout), closed(this.stderr)]).then(() =>
      this.emit('close', code < 0 ? null : code, signalName),
    );
  }
}

const closed = (socket: Socket) =>
  socket.closed ? Promise.resolve() : new Promise<void>((resolve) => socket.once('close', () => resolve()));

function endedSocket(): Socket {
  const socket = new Socket();
  socket.destroy();
  return socket;
}
