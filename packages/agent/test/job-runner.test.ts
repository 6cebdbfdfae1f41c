/**
 * Jobs run as real processes on this machine: what runs, what comes back, what is refused, and what happens to
 * script files.
 */
import { randomUUID } from 'node:crypto';
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import type { JobRun } from '@svc/protocol';
import {
  compileFilter,
  defaultExecSettings,
  type ExecSettings,
  type FilterOrder,
} from '../src/exec/exec-settings.js';
import { startJob, type JobEnvironment, type StartedJob } from '../src/exec/job-start.js';
import { machineInterpreterHost, pathLookup } from '../src/exec/machine.js';
import { scriptsDirOf } from '../src/exec/script-file.js';

const MiB = 1024 * 1024;
let root: string;
let dataDir: string;
/** Folders standing in for PATH entries: one without sudo, one with a stand-in sudo. */
let noSudoDir: string;
let standInSudoDir: string;
/** `sh` → /usr/bin/dash, and `sh-elsewhere` → a copy of dash outside the default allow list. */
let linksDir: string;
const livePids = new Set<number>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-jobs-'));
  dataDir = join(root, 'data');
  noSudoDir = join(root, 'no-sudo');
  standInSudoDir = join(root, 'sudo-bin');
  await mkdir(dataDir);
  await mkdir(noSudoDir);
  await mkdir(standInSudoDir);
  linksDir = join(root, 'links');
  await mkdir(linksDir);
  await mkdir(join(root, 'elsewhere'));
  await copyFile('/usr/bin/dash', join(root, 'elsewhere', 'sh'));
  await symlink('/usr/bin/dash', join(linksDir, 'sh'));
  await symlink(join(root, 'elsewhere', 'sh'), join(linksDir, 'sh-elsewhere'));
});

afterEach(() => {
  for (const pid of livePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  livePids.clear();
});

afterAll(() => rm(root, { recursive: true, force: true }));

/** Settings with the spec defaults, or with the given filters. */
function settings(
  overrides: Partial<ExecSettings> & { allow?: string[]; deny?: string[]; order?: FilterOrder } = {},
): ExecSettings {
  const { allow, deny, order, ...rest } = overrides;
  const defaults = defaultExecSettings();
  return {
    ...defaults,
    filters: {
      allow: allow ? allow.map(compileFilter) : defaults.filters.allow,
      deny: deny ? deny.map(compileFilter) : defaults.filters.deny,
      order: order ?? defaults.filters.order,
    },
    ...rest,
  };
}
/** Anything goes: for tests about running, not about filtering. */
const PERMISSIVE = settings({ allow: ['.*'], deny: [] });

function environment(overrides: Partial<JobEnvironment> = {}, execSettings = PERMISSIVE): JobEnvironment {
  return {
    settings: execSettings,
    dataDir,
    cwd: root,
    host: machineInterpreterHost(execSettings.interpreterAliases),
    findSudo: () => pathLookup(noSudoDir)('sudo'),
    ...overrides,
  };
}

const commandJob = (command: string, overrides: Partial<JobRun> = {}): JobRun => ({
  jid: randomUUID(),
  command,
  interpreter: '',
  cwd: '',
  is_sudo: false,
  timeout_sec: 60,
  ...overrides,
});

const scriptJob = (script: string, overrides: Partial<JobRun> = {}): JobRun =>
  commandJob('', { script: Buffer.from(script).toString('base64'), ...overrides });

async function run(job: JobRun, env = environment()): Promise<StartedJob> {
  const started = await startJob(job, env);
  livePids.add(started.pid);
  return started;
}

/** Runs a job to its end; returns the end record and both streams. */
async function runToEnd(job: JobRun, env = environment()) {
  const started = await run(job, env);
  const end = await started.output.ended;
  const stream = (name: 'stdout' | 'stderr') =>
    Buffer.concat(started.output.parts.filter((p) => p.stream === name).map((p) => p.data));
  return { started, end, stdout: stream('stdout'), stderr: stream('stderr') };
}

const scriptFiles = async () => (existsSync(scriptsDirOf(dataDir)) ? readdir(scriptsDirOf(dataDir)) : []);
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('commands', () => {
  test('a command under /usr/bin runs with the default filters and its stdout comes back exactly', async () => {
    const before = Date.now();
    const { started, end, stdout, stderr } = await runToEnd(
      commandJob('/usr/bin/echo hello   world'),
      environment({}, settings()),
    );
    expect(started.pid).toBeGreaterThan(0);
    expect(Date.parse(started.startedAt)).toBeGreaterThanOrEqual(before - 1);
    expect(stdout.toString()).toBe('hello world\n');
    expect(stderr.length).toBe(0);
    expect(end).toMatchObject({
      status: 'successful',
      exit_code: 0,
      error: '',
      stdout_truncated: false,
      stderr_truncated: false,
    });
    expect(Date.parse(end.finished_at)).toBeGreaterThanOrEqual(Date.parse(started.startedAt));
  });

  test('the command is one argument to sh -c: the shell expands it, nothing of ours does', async () => {
    const { stdout } = await runToEnd(commandJob('/usr/bin/printf "%s|" "a b" $0'));
    expect(stdout.toString()).toBe(`a b|${'/usr/bin/sh'}|`);
  });

  test('a non-zero exit is failed with the exit code', async () => {
    const { end, stderr } = await runToEnd(commandJob('/usr/bin/ls /no/such/path'));
    expect(end).toMatchObject({ status: 'failed', exit_code: 2, error: 'exit status 2' });
    expect(stderr.toString()).toMatch(/No such file or directory/);
  });

  test('a process killed by a signal is failed with the signal named', async () => {
    const { end } = await runToEnd(commandJob('kill -KILL $$'));
    expect(end).toMatchObject({ status: 'failed', exit_code: null, error: 'killed by signal SIGKILL' });
  });

  test('at timeout_sec the result is unknown at once and the process keeps running', async () => {
    const started = await run(commandJob('/usr/bin/sleep 30', { timeout_sec: 1 }));
    const t0 = Date.now();
    const end = await started.output.ended;
    const waited = Date.now() - t0;
    expect(end.status).toBe('unknown');
    expect(end.exit_code).toBeNull();
    expect(end.error).toMatch(/still running after 1 s; the process \(pid \d+\) keeps running/);
    expect(waited).toBeGreaterThan(800);
    expect(isAlive(started.pid)).toBe(true);
  });

  test('output after the timeout is not kept', async () => {
    const started = await run(
      commandJob('/usr/bin/echo early; /usr/bin/sleep 1.5; /usr/bin/echo late', { timeout_sec: 1 }),
    );
    await started.output.ended;
    await started.exited;
    expect(Buffer.concat(started.output.parts.map((p) => p.data)).toString()).toBe('early\n');
  });

  test('stdout over send_back_limit: exactly the limit is kept and the stream marked truncated', async () => {
    const { end, stdout, stderr } = await runToEnd(
      commandJob(`/usr/bin/head -c ${5 * MiB} /dev/zero; /usr/bin/echo err >&2`),
    );
    expect(stdout.length).toBe(4 * MiB);
    expect(stderr.toString()).toBe('err\n');
    expect(end).toMatchObject({ status: 'successful', stdout_truncated: true, stderr_truncated: false });
  });

  test('each stream has its own limit; exactly the limit is not truncated', async () => {
    const limited = { ...PERMISSIVE, sendBackLimit: 1000 };
    const { end, stdout, stderr } = await runToEnd(
      commandJob('/usr/bin/head -c 1000 /dev/zero; /usr/bin/head -c 1500 /dev/zero >&2'),
      environment({}, limited),
    );
    expect([stdout.length, stderr.length]).toEqual([1000, 1000]);
    expect(end).toMatchObject({ stdout_truncated: false, stderr_truncated: true });
  });

  test('bytes that are not UTF-8 come back unchanged', async () => {
    const { stdout, stderr } = await runToEnd(
      commandJob("/usr/bin/printf '\\377\\376\\000\\303(' ; /usr/bin/printf '\\200\\201' >&2"),
    );
    expect(stdout).toEqual(Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28]));
    expect(stderr).toEqual(Buffer.from([0x80, 0x81]));
  });

  test("cwd sets the working directory; empty means the agent's", async () => {
    expect((await runToEnd(commandJob('/usr/bin/pwd', { cwd: '/usr' }))).stdout.toString()).toBe('/usr\n');
    expect((await runToEnd(commandJob('/usr/bin/pwd'))).stdout.toString()).toBe(`${root}\n`);
  });

  test('an absolute interpreter and an alias run the command with -c', async () => {
    const bash = await runToEnd(commandJob('echo "bash $BASH_VERSINFO"', { interpreter: '/usr/bin/bash' }));
    expect(bash.stdout.toString()).toMatch(/^bash \d+\n$/);
    const aliased = { ...PERMISSIVE, interpreterAliases: { shell: '/usr/bin/bash' } };
    const viaAlias = await runToEnd(
      commandJob('echo "bash $BASH_VERSINFO"', { interpreter: 'shell' }),
      environment({}, aliased),
    );
    expect(viaAlias.stdout.toString()).toMatch(/^bash \d+\n$/);
  });
});

describe('refusals: nothing runs', () => {
  let marker: string;
  beforeAll(() => {
    marker = join(root, 'marker');
  });
  afterEach(() => rm(marker, { force: true }));

  const refusal = async (job: JobRun, env: JobEnvironment) => {
    const error: unknown = await startJob(job, env).then(
      (started) => {
        livePids.add(started.pid);
        throw new Error('the job was expected to be refused');
      },
      (err: unknown) => err,
    );
    // Let any process that did start do its work before the marker is checked.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(existsSync(marker)).toBe(false);
    return error as { code: string; message: string };
  };

  test('a command the default deny list refuses', async () => {
    const error = await refusal(
      commandJob(`/usr/bin/echo x; /usr/bin/touch ${marker}`),
      environment({}, settings()),
    );
    expect(error.code).toBe('refused');
    expect(error.message).toBe(
      `command ${JSON.stringify(`/usr/bin/echo x; /usr/bin/touch ${marker}`)} is not allowed by ` +
        '[remote-commands] deny: it matches (\\||<|>|;|,|\\n|&)',
    );
  });

  test('a command outside the allow list', async () => {
    const error = await refusal(commandJob(`touch ${marker}`), environment({}, settings()));
    expect(error.code).toBe('refused');
    expect(error.message).toMatch(
      /^command "touch .*" is not allowed by \[remote-commands\] allow: it matches none of/,
    );
  });

  test('remote commands disabled', async () => {
    const off = settings({ commandsEnabled: false });
    const error = await refusal(commandJob(`/usr/bin/touch ${marker}`), environment({}, off));
    expect(error).toMatchObject({
      code: 'disabled',
      message: 'remote commands are disabled on this client ([remote-commands] enabled = false)',
    });
    const script = await refusal(scriptJob(`/usr/bin/touch ${marker}`), environment({}, off));
    expect(script).toMatchObject({
      code: 'disabled',
      message: expect.stringMatching(/remote scripts need remote commands/),
    });
  });

  test('remote scripts disabled', async () => {
    const error = await refusal(
      scriptJob(`/usr/bin/touch ${marker}`),
      environment({}, settings({ scriptsEnabled: false })),
    );
    expect(error).toMatchObject({
      code: 'disabled',
      message: 'remote scripts are disabled on this client ([remote-scripts] enabled = false)',
    });
  });

  test('a script whose command line the filters refuse is never written', async () => {
    const onlyLocal = settings({ allow: ['^/usr/local/bin/'] });
    const error = await refusal(scriptJob(`/usr/bin/touch ${marker}`), environment({}, onlyLocal));
    expect(error.code).toBe('refused');
    expect(error.message).toMatch(
      /^script command line "\/usr\/bin\/sh .*\/scripts\/[0-9a-f-]{36}"( \(its interpreter resolves to \/\S+\))? is not allowed by \[remote-commands\] allow/,
    );
    expect(await scriptFiles()).toEqual([]);
  });

  test('a script whose interpreter resolves outside the allow list, naming both paths', async () => {
    const link = join(linksDir, 'sh-elsewhere');
    const error = await refusal(
      scriptJob(`#!${link}\n/usr/bin/touch ${marker}\n`),
      environment({}, settings()),
    );
    expect(error.code).toBe('refused');
    const file = `${scriptsDirOf(dataDir)}/[0-9a-f-]{36}`;
    expect(error.message).toMatch(
      new RegExp(
        `^script command line "${link} ${file}" \\(its interpreter resolves to ${join(root, 'elsewhere', 'sh')}\\) ` +
          'is not allowed by \\[remote-commands\\] allow: it matches none of',
      ),
    );
    expect(await scriptFiles()).toEqual([]);
  });

  test('a missing or wrong cwd', async () => {
    const missing = await refusal(
      commandJob(`/usr/bin/touch ${marker}`, { cwd: '/no/such/dir' }),
      environment(),
    );
    expect(missing).toMatchObject({
      code: 'failed',
      message: 'cwd /no/such/dir does not exist on this client',
    });
    const file = await refusal(
      commandJob(`/usr/bin/touch ${marker}`, { cwd: '/etc/hostname' }),
      environment(),
    );
    expect(file).toMatchObject({ code: 'failed', message: 'cwd /etc/hostname is not a directory' });
  });

  test('an interpreter that does not exist', async () => {
    const error = await refusal(
      commandJob(`/usr/bin/touch ${marker}`, { interpreter: 'tacoscript' }),
      environment(),
    );
    expect(error).toMatchObject({
      code: 'failed',
      message: expect.stringMatching(/tacoscript is not installed/),
    });
  });

  test('is_sudo without sudo installed', async () => {
    const error = await refusal(commandJob(`/usr/bin/touch ${marker}`, { is_sudo: true }), environment());
    expect(error).toMatchObject({
      code: 'failed',
      message: "is_sudo is set but sudo is not installed: no sudo program on this client's PATH",
    });
  });
});

describe('sudo -n', () => {
  /** A stand-in for sudo that behaves as sudo -n does when a password would be needed. */
  async function standInSudo(body: string): Promise<JobEnvironment> {
    const path = join(standInSudoDir, 'sudo');
    await writeFile(path, `#!/bin/sh\n${body}\n`);
    await chmod(path, 0o755);
    return environment({ findSudo: () => pathLookup(standInSudoDir)('sudo') });
  }

  test('runs `sudo -n <interpreter> -c <command>`', async () => {
    const env = await standInSudo('/usr/bin/printf "%s\\n" "$@"');
    const { stdout, end } = await runToEnd(commandJob('/usr/bin/id -u', { is_sudo: true }), env);
    expect(stdout.toString()).toBe('-n\n/usr/bin/sh\n-c\n/usr/bin/id -u\n');
    expect(end.status).toBe('successful');
  });

  test("sudo's refusal fails the job with sudo's own message", async () => {
    const env = await standInSudo('echo "sudo: a password is required" >&2; exit 1');
    const { end } = await runToEnd(commandJob('/usr/bin/id -u', { is_sudo: true }), env);
    expect(end).toMatchObject({
      status: 'failed',
      exit_code: 1,
      error: 'sudo refused to run the command: sudo: a password is required',
    });
  });

  test('exit status 1 of the command itself stays "exit status 1"', async () => {
    const env = await standInSudo('shift; exec "$@"');
    const { end } = await runToEnd(commandJob('echo no >&2; exit 1', { is_sudo: true }), env);
    expect(end).toMatchObject({ status: 'failed', exit_code: 1, error: 'exit status 1' });
  });
});

describe('scripts', () => {
  afterEach(async () => {
    // Every test leaves the scripts folder empty once its processes are gone.
    await vi.waitFor(async () => expect(await scriptFiles()).toEqual([]), { timeout: 5000 });
  });

  const SELF_CHECK = [
    'echo "$0"',
    '[ -f "$0" ] && echo present',
    '/usr/bin/stat -c %a "$0"',
    '/usr/bin/stat -c %a "$(dirname "$0")"',
  ].join('\n');

  test('runs from a private file under <data_dir>/scripts with the default filters; the file is deleted after', async () => {
    const { started, stdout, end } = await runToEnd(
      scriptJob(`${SELF_CHECK}\n`),
      environment({}, settings()),
    );
    const [path, present, fileMode, dirMode] = stdout.toString().trim().split('\n');
    expect(path).toMatch(new RegExp(`^${scriptsDirOf(dataDir)}/[0-9a-f-]{36}$`));
    expect([present, fileMode, dirMode]).toEqual(['present', '600', '700']);
    expect(end.status).toBe('successful');
    await started.exited;
    await vi.waitFor(() => expect(existsSync(path ?? '')).toBe(false));
  });

  test('the file is deleted after a failing run too', async () => {
    const { stdout, end } = await runToEnd(scriptJob('echo "$0"\nexit 4\n'));
    expect(end).toMatchObject({ status: 'failed', exit_code: 4 });
    await vi.waitFor(() => expect(existsSync(stdout.toString().trim())).toBe(false));
  });

  test('after a timeout the file stays while the process runs and goes when it exits', async () => {
    const started = await run(scriptJob('echo "$0"\nexec /usr/bin/sleep 30\n', { timeout_sec: 1 }));
    const end = await started.output.ended;
    expect(end.status).toBe('unknown');
    const path = Buffer.concat(started.output.parts.map((p) => p.data))
      .toString()
      .trim();
    expect(existsSync(path)).toBe(true);
    process.kill(started.pid, 'SIGKILL');
    await started.exited;
    await vi.waitFor(() => expect(existsSync(path)).toBe(false));
  });

  test('the file is deleted when the interpreter cannot be started', async () => {
    // Executable, but its own #! program is missing: execve fails with ENOENT after the script was written.
    const broken = join(root, 'broken-interpreter');
    await writeFile(broken, '#!/no/such/program\n');
    await chmod(broken, 0o755);
    const error: unknown = await startJob(
      scriptJob('echo hi\n', { interpreter: broken }),
      environment(),
    ).catch((err: unknown) => err);
    expect(error).toMatchObject({
      code: 'failed',
      message: expect.stringMatching(/^cannot start .*broken-interpreter: .*ENOENT/),
    });
    expect(await scriptFiles()).toEqual([]);
  });

  test('an alias and an absolute path as the interpreter run the file', async () => {
    const env = environment({}, { ...PERMISSIVE, interpreterAliases: { shell: '/usr/bin/bash' } });
    const viaAlias = await runToEnd(scriptJob('echo "bash $BASH_VERSINFO"\n', { interpreter: 'shell' }), env);
    expect(viaAlias.stdout.toString()).toMatch(/^bash \d+\n$/);
    const absolute = await runToEnd(
      scriptJob('echo "bash $BASH_VERSINFO"\n', { interpreter: '/usr/bin/bash' }),
    );
    expect(absolute.stdout.toString()).toMatch(/^bash \d+\n$/);
  });

  test('a script starting with #! and no interpreter runs with the program it names', async () => {
    const { stdout } = await runToEnd(
      scriptJob('#!/usr/bin/env bash\necho "bash $BASH_VERSINFO"\n'),
      environment({}, settings()),
    );
    expect(stdout.toString()).toMatch(/^bash \d+\n$/);
  });

  test('an interpreter linked into /usr/bin passes the default filters by its resolved path', async () => {
    const link = join(linksDir, 'sh');
    const viaShebang = await runToEnd(
      scriptJob(`#!${link}\necho "shebang $0"\n`),
      environment({}, settings()),
    );
    expect(viaShebang.stdout.toString()).toMatch(/^shebang \/.*\/scripts\/[0-9a-f-]{36}\n$/);
    const named = await runToEnd(
      scriptJob('echo named\n', { interpreter: link }),
      environment({}, settings()),
    );
    expect(named.stdout.toString()).toBe('named\n');
  });

  test('a wider scripts folder is tightened to 0700 before use', async () => {
    await mkdir(scriptsDirOf(dataDir), { recursive: true });
    await chmod(scriptsDirOf(dataDir), 0o777);
    const { stdout } = await runToEnd(scriptJob('/usr/bin/stat -c %a "$(dirname "$0")"\n'));
    expect(stdout.toString()).toBe('700\n');
  });

  test('the script bytes are written unchanged', async () => {
    const bytes = Buffer.from([0x65, 0x63, 0x68, 0x6f, 0x20, 0xff, 0xfe, 0x0a]); // "echo \xff\xfe\n"
    const started = await run({ ...commandJob(''), script: bytes.toString('base64') });
    await started.output.ended;
    expect(Buffer.concat(started.output.parts.map((p) => p.data))).toEqual(Buffer.from([0xff, 0xfe, 0x0a]));
  });
});
