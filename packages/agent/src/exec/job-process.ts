import type { Invocation } from './invocation.js';
import { startJobChild } from './job-child.js';
import { jobErrors } from './job-errors.js';
import type { JobOutcome, JobOutput } from './job-output.js';
import { setLongTimeout } from './long-timeout.js';
import { JOB_CANCEL_GRACE_MS } from '@svc/protocol';

export interface ProcessSpec {
  invocation: Invocation;
  cwd: string;
  timeoutMs: number;
  /** The program is sudo: a refusal of sudo's own (exit 1, `sudo: ...` on stderr) is reported as such. */
  sudo: boolean;
  env?: NodeJS.ProcessEnv;
  /** Runs once the process has exited and before its result ends (e.g. deleting its script file). */
  afterExit?: () => Promise<void>;
  /** At the timeout, kill the process group and report `failed` instead of `unknown` (timeout_kill). */
  killAtTimeout?: boolean;
  /** Between SIGTERM and SIGKILL of the process group; JOB_CANCEL_GRACE_MS unless a test shortens it. */
  killGraceMs?: number;
  /** Start it with node's child_process even where posix_spawn is available (tests of both ways). */
  nodeSpawn?: boolean;
}

export interface StartedProcess {
  pid: number;
  /** RFC 3339 with milliseconds. */
  startedAt: string;
  /** Resolves once the process has exited, which may be long after the result was ended by the timeout. */
  exited: Promise<void>;
  /**
   * Kills the whole process group (SIGTERM, SIGKILL after the grace) and ends the result `cancelled` with the
   * output so far once the process has exited; false when the result has already ended.
   */
  cancel: () => boolean;
}

/** After the process exits, how long to wait for its stdout/stderr to close (a background child may hold them). */
const OUTPUT_GRACE_MS = 1000;
const SUDO_REFUSAL = /^sudo: /;

/**
 * Starts the program and feeds its stdout/stderr into `output` until the process exits or `timeoutMs` passes.
 * Resolves once the process is running; rejects with a `failed` job error when it cannot start. At the timeout
 * the result ends as `unknown` and the process is left running (unless `killAtTimeout`); its later output is
 * read and dropped so that it never blocks on a full pipe. Outside Windows the process leads its own process
 * group (detached), so a cancel or timeout_kill reaches every process it started.
 */
export async function startProcess(spec: ProcessSpec, output: JobOutput): Promise<StartedProcess> {
  const { invocation, cwd, timeoutMs } = spec;
  const child = await startJobChild({ invocation, cwd, env: spec.env }, spec.nodeSpawn);
  /** Set when svcd cancelled the job or timeout_kill fired: how the result ends once the process exits. */
  let killedAs: JobOutcome | undefined;
  child.stdout.on('data', (chunk: Buffer) => output.append('stdout', chunk));
  child.stderr.on('data', (chunk: Buffer) => output.append('stderr', chunk));

  return new Promise<StartedProcess>((resolve, reject) => {
    child.once('error', (err) => reject(jobErrors.failed(`cannot start ${invocation.file}: ${err.message}`)));
    child.once('spawn', () => {
      // Errors after the start (a failed kill, a pipe error) must not crash the agent.
      child.on('error', () => undefined);
      const pid = child.pid ?? 0;
      const startedAt = new Date().toISOString();
      let killTimer: NodeJS.Timeout | undefined;
      const killGroup = (outcome: JobOutcome) => {
        killedAs ??= outcome;
        signalGroup(pid, 'SIGTERM');
        killTimer ??= setTimeout(() => signalGroup(pid, 'SIGKILL'), spec.killGraceMs ?? JOB_CANCEL_GRACE_MS);
        killTimer.unref();
      };
      const cancelTimeout = setLongTimeout(timeoutMs, () => {
        if (spec.killAtTimeout)
          return killGroup({
            status: 'failed',
            exit_code: null,
            finished_at: '',
            error: `timeout: killed after ${timeoutMs / 1000} s (timeout_kill), with every process it started`,
          });
        output.finish({
          status: 'unknown',
          exit_code: null,
          finished_at: new Date().toISOString(),
          error:
            `timeout: still running after ${timeoutMs / 1000} s; the process (pid ${pid}) keeps running on ` +
            'the client and its later output is not sent',
        });
      });
      const cancel = (): boolean => {
        if (output.end) return false;
        killGroup({
          status: 'cancelled',
          exit_code: null,
          finished_at: '',
          error: 'cancelled: svcd asked to stop it; its process group was killed',
        });
        return true;
      };
      const exited = new Promise<void>((done) => {
        child.once('exit', (code, signal) => {
          cancelTimeout();
          done();
          // The group's other processes may outlive the leader: they get the same signals until the grace ends.
          if (killedAs) signalGroup(pid, 'SIGTERM');
          // A result that says "finished" must not find its script file still there.
          const cleanedUp = spec.afterExit?.() ?? Promise.resolve();
          const finish = () =>
            void cleanedUp.then(() =>
              output.finish(
                killedAs
                  ? { ...killedAs, finished_at: new Date().toISOString() }
                  : outcomeOf(code, signal, spec.sudo, output),
              ),
            );
          const grace = setTimeout(finish, OUTPUT_GRACE_MS);
          grace.unref();
          child.once('close', () => {
            clearTimeout(grace);
            finish();
          });
        });
      });
      resolve({ pid, startedAt, exited, cancel });
    });
  });
}

/** Signals the process group led by `pid` (the whole tree the job started); the process alone on Windows. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // Already gone.
  }
}

function outcomeOf(
  code: number | null,
  signal: NodeJS.Signals | null,
  sudo: boolean,
  output: JobOutput,
): JobOutcome {
  const finished_at = new Date().toISOString();
  if (code === 0) return { status: 'successful', exit_code: 0, finished_at, error: '' };
  if (code === null)
    return {
      status: 'failed',
      exit_code: null,
      finished_at,
      error: `killed by signal ${signal ?? 'unknown'}`,
    };
  const refusal = sudo && code === 1 ? sudoRefusal(output) : undefined;
  return {
    status: 'failed',
    exit_code: code,
    finished_at,
    error: refusal ? `sudo refused to run the command: ${refusal}` : `exit status ${code}`,
  };
}

/** sudo's own complaint (e.g. "sudo: a password is required") when stderr starts with one. */
function sudoRefusal(output: JobOutput): string | undefined {
  const firstLine = output.head('stderr', 1024).toString('utf8').split('\n')[0]?.trim() ?? '';
  return SUDO_REFUSAL.test(firstLine) ? firstLine.slice(0, 1000) : undefined;
}
