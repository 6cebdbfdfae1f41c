import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { JobRun } from '@svc/protocol';
import type { SecretValue } from '@svc/platform';
import type { ExecSettings } from './exec-settings.js';
import { checkCommandLine } from './filters.js';
import { resolveInterpreter, shebangOf, type Interpreter, type InterpreterHost } from './interpreter.js';
import {
  commandInvocation,
  commandLineText,
  scriptExtension,
  scriptInvocation,
  withSudo,
  type Invocation,
} from './invocation.js';
import { jobErrors } from './job-errors.js';
import { JobOutput } from './job-output.js';
import { startProcess, type StartedProcess } from './job-process.js';
import { newScriptPath, prepareScriptsDir, removeScriptFile, writeScriptFile } from './script-file.js';

/** Where and how jobs run on this machine. */
export interface JobEnvironment {
  settings: ExecSettings;
  /** Absolute; scripts go to `<dataDir>/scripts`. */
  dataDir: string;
  /** The agent's own working directory, used when a job names none. */
  cwd: string;
  host: InterpreterHost;
  /** Absolute path of sudo, or undefined when it is not installed. */
  findSudo(): Promise<string | undefined>;
  /** The environment of started processes; undefined = the agent's own. */
  env?: NodeJS.ProcessEnv;
  /** Called when a script file could not be deleted after its run. */
  onCleanupError?: (path: string, err: unknown) => void;
}

export interface StartedJob extends StartedProcess {
  output: JobOutput;
}

/**
 * Checks a `job.run` request against the settings and starts it. Rejects with a `disabled`, `refused` or
 * `failed` job error before anything runs. A script is written to a new file under `<dataDir>/scripts` that is
 * deleted when its process exits, or at once when it cannot start.
 */
export async function startJob(job: JobRun, env: JobEnvironment): Promise<StartedJob> {
  const { settings } = env;
  const script = job.script === undefined ? undefined : Buffer.from(job.script, 'base64');
  checkEnabled(settings, script !== undefined);
  if (script === undefined) {
    if (job.command.trim() === '') throw jobErrors.failed('the command is empty');
    checkAllowed('command', job.command, settings);
  }
  if (job.is_sudo && env.host.platform === 'win32')
    throw jobErrors.failed('is_sudo is not supported on Windows');
  const cwd = await workingDirectory(job.cwd, env.cwd);
  const interpreter = await interpreterFor(job, script, env.host);

  let invocation: Invocation;
  let scriptPath: string | undefined;
  if (script === undefined) {
    invocation = commandInvocation(interpreter, job.command);
  } else {
    scriptPath = newScriptPath(env.dataDir, scriptExtension(interpreter.kind));
    invocation = scriptInvocation(interpreter, scriptPath);
    await checkScriptAllowed(interpreter, scriptPath, env);
  }
  if (job.is_sudo) {
    const sudo = await env.findSudo();
    if (!sudo)
      throw jobErrors.failed(
        "is_sudo is set but sudo is not installed: no sudo program on this client's PATH",
      );
    invocation = withSudo(invocation, sudo, Object.keys(job.env ?? {}));
  }

  if (scriptPath !== undefined && script !== undefined) {
    await prepareScriptsDir(env.dataDir);
    await writeScriptFile(scriptPath, script);
  }
  const output = new JobOutput(job.jid, settings.sendBackLimit, secretsOf(job));
  const path = scriptPath;
  const spec = {
    invocation,
    cwd,
    timeoutMs: job.timeout_sec * 1000,
    sudo: job.is_sudo,
    killAtTimeout: job.timeout_kill === true,
    env: job.env ? { ...(env.env ?? process.env), ...job.env } : env.env,
    ...(path === undefined
      ? {}
      : {
          afterExit: () => removeScriptFile(path).catch((err: unknown) => env.onCleanupError?.(path, err)),
        }),
  };
  let started: StartedProcess;
  try {
    started = await startProcess(spec, output);
  } catch (err) {
    if (path !== undefined) await removeScriptFile(path).catch(() => undefined);
    throw err;
  }
  return { ...started, output };
}

/** The values of the job's secret variables, each with its label. */
function secretsOf(job: JobRun): SecretValue[] {
  return Object.entries(job.redact ?? {}).flatMap(([name, label]) => {
    const value = job.env?.[name];
    return value === undefined ? [] : [{ value, label }];
  });
}

function checkEnabled(settings: ExecSettings, isScript: boolean): void {
  if (!settings.commandsEnabled)
    throw jobErrors.disabled(
      isScript
        ? 'remote scripts need remote commands, which are disabled on this client ([remote-commands] enabled = false)'
        : 'remote commands are disabled on this client ([remote-commands] enabled = false)',
    );
  if (isScript && !settings.scriptsEnabled)
    throw jobErrors.disabled('remote scripts are disabled on this client ([remote-scripts] enabled = false)');
}

function checkAllowed(what: string, line: string, settings: ExecSettings, resolved?: ResolvedSpelling): void {
  const verdict = checkCommandLine(line, settings.filters, resolved ? [resolved.line] : []);
  const note = resolved ? ` (its interpreter resolves to ${resolved.interpreter})` : '';
  if (!verdict.allowed)
    throw jobErrors.refused(
      `${what} ${JSON.stringify(line)}${note} is not allowed by [remote-commands] ${verdict.filter}: ` +
        `it ${verdict.detail}`,
    );
}

/** A script's command line with its interpreter's resolved path. */
interface ResolvedSpelling {
  interpreter: string;
  line: string;
}

/**
 * A script's command line `<interpreter> <file>` passes the filters as written or with the interpreter's resolved
 * path (symlinks followed): on a merged-/usr host `#!/bin/sh` is /usr/bin/dash, which the default allow accepts.
 */
async function checkScriptAllowed(interpreter: Interpreter, scriptPath: string, env: JobEnvironment) {
  const line = commandLineText(scriptInvocation(interpreter, scriptPath));
  const resolvedPath = await env.host.realPath(interpreter.path);
  const resolved =
    resolvedPath === interpreter.path
      ? undefined
      : {
          interpreter: resolvedPath,
          line: commandLineText(scriptInvocation({ ...interpreter, path: resolvedPath }, scriptPath)),
        };
  checkAllowed('script command line', line, env.settings, resolved);
}

async function workingDirectory(requested: string, agentCwd: string): Promise<string> {
  if (requested === '') return agentCwd;
  const dir = resolve(agentCwd, requested);
  try {
    if ((await stat(dir)).isDirectory()) return dir;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw jobErrors.failed(`cwd ${requested} does not exist on this client`);
    throw jobErrors.failed(`cwd ${requested} cannot be used: ${(err as Error).message}`);
  }
  throw jobErrors.failed(`cwd ${requested} is not a directory`);
}

/**
 * The job's interpreter. A script sent without one that starts with `#!/absolute/program` runs with that program
 * (as the kernel would run it, but with the file passed as an argument so the filters see the real program).
 */
async function interpreterFor(
  job: JobRun,
  script: Buffer | undefined,
  host: InterpreterHost,
): Promise<Interpreter> {
  const shebang =
    script && job.interpreter === '' && host.platform !== 'win32' ? shebangOf(script) : undefined;
  if (!shebang) return resolveInterpreter(job.interpreter, host);
  if (!(await host.isExecutable(shebang.path)))
    throw jobErrors.failed(
      `the script's #! interpreter ${shebang.path} does not exist or is not an executable file`,
    );
  return { path: shebang.path, kind: 'posix', args: shebang.args };
}
