/**
 * Remote execution through real processes: svcd, and svc agents that run real commands and scripts.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  startSvcdProcess,
  svcdFingerprint,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../test-support/e2e-setup.js';
import { createApiClient, type ApiClient } from '../test-support/api-client.js';
import { SVC_BIN, freePort, startProcess, type RunningProcess } from '../test-support/process.js';

const ADMIN = { basic: ['admin', 'admin-secret-1'] as [string, string] };
const MiB = 1024 * 1024;

interface JobView {
  jid: string;
  status: string;
  pid: number | null;
  exit_code: number | null;
  error: string;
  started_at: string | null;
  finished_at: string | null;
  result: { stdout: string; stderr: string; stdout_truncated: boolean; stderr_truncated: boolean };
}

let dir: string;
let configPath: string;
let api: ApiClient;
let svcd: RunningProcess | undefined;
const agents: RunningProcess[] = [];

async function startSvcd(): Promise<void> {
  svcd = await startSvcdProcess(configPath);
}

/** An agent with its own config file (the [remote-commands] etc. sections) and data folder. */
async function startAgent(id: string, sections: string[], clientUrl: string, fingerprint: string) {
  const conf = join(dir, `${id}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "${clientUrl}"`,
      `auth = "agent:agent-password-1"`,
      `id = "${id}"`,
      `fingerprint = "${fingerprint}"`,
      `data_dir = "${id}-data"`,
      ...sections,
    ].join('\n'),
  );
  const agent = startProcess(SVC_BIN, ['-c', conf, '--log-level', 'debug'], { env: { SVC_AUTH: undefined } });
  agents.push(agent);
  await agent.waitForLog('connected to svcd');
  return agent;
}

async function run(clientId: string, body: Record<string, unknown>, path = 'commands'): Promise<string> {
  const res = await api.post(`/clients/${clientId}/${path}`, body, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data.jid as string;
}

async function job(clientId: string, jid: string): Promise<JobView> {
  const res = await api.get(`/clients/${clientId}/commands/${jid}`, { auth: ADMIN });
  expect(res.status, res.text).toBe(200);
  return res.json.data as JobView;
}

/** Polls the job (bounded) until it is no longer running: the API offers no event for it. */
async function finished(clientId: string, jid: string, withinMs = 20_000): Promise<JobView> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const view = await job(clientId, jid);
    if (view.status !== 'running') return view;
    if (Date.now() > deadline) throw new Error(`job ${jid} still running after ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-jobs-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-jobs-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  await startSvcd();
  api = createApiClient(`http://127.0.0.1:${apiPort}/api/v1`);
  const fingerprint = await svcdFingerprint(api);
  const url = `http://127.0.0.1:${clientPort}`;
  await startAgent('strict', [], url, fingerprint);
  await startAgent(
    'open',
    [
      '[remote-commands]',
      // deny first, then allow: everything passes unless a deny matches and no allow rescues it.
      'order = ["deny", "allow"]',
      "deny = ['rm ', 'forbidden']",
      "allow = ['^/usr/bin/echo forbidden-but-allowed$']",
      '[interpreter-aliases]',
      'mybash = "/bin/bash"',
    ],
    url,
    fingerprint,
  );
}, 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('commands on a real agent', () => {
  test('/usr/bin/echo succeeds with its exact output, its pid and sub-second times', async () => {
    const done = await finished('strict', await run('strict', { command: '/usr/bin/echo hello  world' }));
    expect(done).toMatchObject({ status: 'successful', exit_code: 0, error: '' });
    expect(done.result).toEqual({
      stdout: 'hello world\n',
      stderr: '',
      stdout_truncated: false,
      stderr_truncated: false,
    });
    expect(done.pid).toBeGreaterThan(0);
    expect(done.started_at).toMatch(/\.\d{3}Z$/);
    expect(Date.parse(done.finished_at ?? '')).toBeGreaterThanOrEqual(Date.parse(done.started_at ?? ''));
  });

  test('each default deny case is refused, recorded failed with the filter, and never runs', async () => {
    const marker = join(dir, 'marker');
    const attempts = [
      `/usr/bin/touch ${marker}; /usr/bin/true`,
      `/usr/bin/true | /usr/bin/touch ${marker}`,
      `/usr/bin/echo x > ${marker}`,
      `/usr/bin/touch ${marker} < /dev/null`,
      `/usr/bin/touch ${marker} & /usr/bin/true`,
      `/usr/bin/touch ${marker},x`,
      `/usr/bin/true\n/usr/bin/touch ${marker}`,
      `touch ${marker}`, // not under an allowed path
      // What runs a second command without the spec's characters:
      `/usr/bin/echo $(/usr/bin/touch ${marker})`,
      `/usr/bin/echo \`/usr/bin/touch ${marker}\``,
      `/usr/bin/echo \${x:-$(/usr/bin/touch ${marker})}`,
      `/usr/bin/echo $(( $(/usr/bin/touch ${marker}) 1 ))`,
      `/usr/bin/true (/usr/bin/touch ${marker})`,
      `/usr/bin/true\r/usr/bin/touch ${marker}`,
    ];
    for (const command of attempts) {
      const done = await finished('strict', await run('strict', { command }));
      expect(done.status, command).toBe('failed');
      expect(done.error, command).toMatch(/refused by the client: .*\[remote-commands\] (deny|allow)/);
      expect(done.pid, command).toBeNull();
    }
    expect(existsSync(marker)).toBe(false);
  });

  test('command substitution is refused with bash as the interpreter too', async () => {
    const marker = join(dir, 'bash-marker');
    for (const command of [
      `/usr/bin/echo $(/usr/bin/touch ${marker})`,
      `/usr/bin/echo \`/usr/bin/touch ${marker}\``,
      `/usr/bin/echo $(( a[$(/usr/bin/touch ${marker})] ))`,
    ]) {
      const done = await finished('strict', await run('strict', { command, interpreter: 'bash' }));
      expect(done, command).toMatchObject({ status: 'failed', pid: null });
      expect(done.error, command).toMatch(
        /refused by the client: .*\[remote-commands\] deny: it matches \(`/,
      );
    }
    expect(existsSync(marker)).toBe(false);
  });

  test('with order deny, allow: a deny match refuses unless an allow also matches', async () => {
    const refused = await finished('open', await run('open', { command: '/usr/bin/echo forbidden' }));
    expect(refused.status).toBe('failed');
    expect(refused.error).toMatch(/\[remote-commands\] deny/);
    const rescued = await finished(
      'open',
      await run('open', { command: '/usr/bin/echo forbidden-but-allowed' }),
    );
    expect(rescued.result.stdout).toBe('forbidden-but-allowed\n');
    const neither = await finished('open', await run('open', { command: 'echo a; echo b' }));
    expect(neither.result.stdout).toBe('a\nb\n');
  });

  test('a non-zero exit is failed with its exit code', async () => {
    const done = await finished('open', await run('open', { command: 'echo oops >&2; exit 3' }));
    expect(done).toMatchObject({ status: 'failed', exit_code: 3 });
    expect(done.error).toMatch(/exit status 3/);
    expect(done.result.stderr).toBe('oops\n');
  });

  test('timeout_sec=1 on a long command gives unknown while the process keeps running', async () => {
    const done = await finished('open', await run('open', { command: 'sleep 30', timeout_sec: 1 }));
    expect(done.status).toBe('unknown');
    expect(done.error).toMatch(/still running after 1 s/);
    expect(done.pid).toBeGreaterThan(0);
    expect(isAlive(done.pid ?? 0)).toBe(true);
    process.kill(done.pid ?? 0, 'SIGKILL');
  });

  test('5 MiB of output: exactly 4 MiB kept and marked truncated; bytes that are not UTF-8 do not break it', async () => {
    const big = await finished(
      'open',
      await run('open', { command: 'head -c 5242880 /dev/zero | tr "\\0" a' }),
    );
    expect(big.status).toBe('successful');
    expect(big.result.stdout).toHaveLength(4 * MiB);
    expect(big.result.stdout_truncated).toBe(true);
    const binary = await finished('open', await run('open', { command: "printf 'a\\377\\376b'" }));
    expect(binary).toMatchObject({ status: 'successful', result: { stdout: 'a\uFFFD\uFFFDb' } });
    // The link still works.
    const after = await finished('strict', await run('strict', { command: '/usr/bin/echo still here' }));
    expect(after.result.stdout).toBe('still here\n');
  });
});

describe('scripts on a real agent', () => {
  const scriptsDir = () => join(dir, 'open-data', 'scripts');
  const base64 = (text: string) => Buffer.from(text).toString('base64');

  test('the script file exists while it runs and is gone after success and failure', async () => {
    const ok = await finished(
      'open',
      await run('open', { script: base64('test -f "$0" && echo "running $0"\n') }, 'scripts'),
    );
    expect(ok.status).toBe('successful');
    const path = /^running (.+)\n$/.exec(ok.result.stdout)?.[1] ?? '';
    expect(path.startsWith(scriptsDir())).toBe(true);
    expect(existsSync(path)).toBe(false);
    const failing = await finished('open', await run('open', { script: base64('exit 7\n') }, 'scripts'));
    expect(failing).toMatchObject({ status: 'failed', exit_code: 7 });
    const spawnFailure = await finished(
      'open',
      await run('open', { script: base64('echo never\n'), interpreter: '/nonexistent/shell' }, 'scripts'),
    );
    expect(spawnFailure.status).toBe('failed');
    expect(spawnFailure.result.stdout).toBe('');
    expect(await readdir(scriptsDir())).toEqual([]);
  });

  test('a default agent runs scripts starting with #!/bin/sh and #!/bin/bash (merged /usr)', async () => {
    // On this host /bin is /usr/bin, so /bin/sh resolves to /usr/bin/dash and /bin/bash to /usr/bin/bash.
    expect(await realpath('/bin/sh')).toMatch(/^\/usr\/bin\//);
    const sh = await finished(
      'strict',
      await run('strict', { script: base64('#!/bin/sh\necho "sh $0"\n') }, 'scripts'),
    );
    expect(sh).toMatchObject({ status: 'successful', exit_code: 0 });
    expect(sh.result.stdout).toMatch(/^sh \/.*\/strict-data\/scripts\/[0-9a-f-]{36}\n$/);
    const bash = await finished(
      'strict',
      await run('strict', { script: base64('#!/bin/bash\necho "bash ${BASH_VERSINFO[0]}"\n') }, 'scripts'),
    );
    expect(bash).toMatchObject({ status: 'successful', exit_code: 0 });
    expect(bash.result.stdout).toMatch(/^bash \d+\n$/);
  });

  test('a script runs through an alias and through an absolute interpreter', async () => {
    const viaAlias = await finished(
      'open',
      await run(
        'open',
        { script: base64('echo "$BASH_VERSION" | cut -c1\n'), interpreter: 'mybash' },
        'scripts',
      ),
    );
    expect(viaAlias.result.stdout).toMatch(/^\d\n$/);
    const absolute = await finished(
      'open',
      await run('open', { script: base64('echo absolute\n'), interpreter: '/bin/sh' }, 'scripts'),
    );
    expect(absolute.result.stdout).toBe('absolute\n');
  });
});

describe('across a restart of svcd', () => {
  test('a result that finishes while svcd is down is stored when the agent is back', async () => {
    const flag = join(dir, 'go-on');
    // Runs until the flag exists, so it finishes only after svcd was stopped.
    const jid = await run('open', {
      command: `while [ ! -e ${flag} ]; do sleep 0.05; done; echo finished late`,
      timeout_sec: 120,
    });
    expect((await job('open', jid)).status).toBe('running');
    const stopped = svcd;
    stopped?.child.kill('SIGTERM');
    await stopped?.exited;
    await writeFile(flag, '');
    await startSvcd();
    const done = await finished('open', jid, 60_000);
    expect(done).toMatchObject({ status: 'successful', result: { stdout: 'finished late\n' } });
  }, 90_000);
});
