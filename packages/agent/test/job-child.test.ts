import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobSpawnMethod, startJobChild, type JobChild } from '../src/exec/job-child.js';

const SH = '/bin/sh';

interface Finished {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

async function finish(child: JobChild): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { stdout, stderr, code, signal };
}

const shell = (command: string, extra: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) => ({
  invocation: { file: SH, args: ['-c', command], windowsVerbatimArguments: false },
  cwd: extra.cwd ?? tmpdir(),
  ...(extra.env ? { env: extra.env } : {}),
});

describe('the job spawn method', () => {
  it('is posix_spawn on Linux, where npm ci builds @svc/native-spawn', async () => {
    expect(await jobSpawnMethod()).toBe(process.platform === 'linux' ? 'posix_spawn' : 'child_process');
  });
});

describe.each([
  ['posix_spawn', false],
  ['child_process', true],
])('a job process started with %s', (_method, nodeSpawn) => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-job-child-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('pipes stdout and stderr apart and reports the exit status', async () => {
    const child = await startJobChild(shell('echo out; echo err >&2; exit 3'), nodeSpawn);
    expect(child.pid).toBeGreaterThan(0);
    expect(await finish(child)).toEqual({ stdout: 'out\n', stderr: 'err\n', code: 3, signal: null });
  });

  it('runs in the given directory with exactly the given environment', async () => {
    const child = await startJobChild(
      shell('pwd; echo "$SVC_JOB_TEST|$HOME"', {
        cwd: dir,
        env: { SVC_JOB_TEST: 'a b=c', PATH: '/usr/bin:/bin' },
      }),
      nodeSpawn,
    );
    expect((await finish(child)).stdout).toBe(`${dir}\na b=c|\n`);
  });

  it('reports the signal that ended the process, with no exit status', async () => {
    const child = await startJobChild(shell('kill -TERM $$; sleep 5'), nodeSpawn);
    expect(await finish(child)).toMatchObject({ code: null, signal: 'SIGTERM' });
  });

  it('leads its own process group, has stdin at end of file and no signal blocked or ignored', async () => {
    const child = await startJobChild(
      shell('cat; cut -d" " -f5 /proc/$$/stat; grep -E "^Sig(Blk|Ign):" /proc/self/status'),
      nodeSpawn,
    );
    const { stdout, code } = await finish(child);
    expect(code).toBe(0);
    const [pgid, blocked, ignored] = stdout.trim().split('\n');
    expect(Number(pgid)).toBe(child.pid);
    expect(BigInt(`0x${blocked!.split(/\s+/)[1]}`)).toBe(0n);
    // Signals 1-31 (the standard ones; SIGPIPE is the one node ignores) are at their default action. glibc's
    // posix_spawn leaves its two internal real-time signals (32, 33) ignored; no glibc program can use them.
    expect(BigInt(`0x${ignored!.split(/\s+/)[1]}`) & 0x7fffffffn).toBe(0n);
  });

  it('signals the whole group through the leader pid', async () => {
    const pidFile = join(dir, `grandchild-${String(nodeSpawn)}`);
    const child = await startJobChild(shell(`sleep 30 & echo $! > ${pidFile}; wait`), nodeSpawn);
    const done = finish(child);
    let grandchild = '';
    while (!grandchild) grandchild = await readFile(pidFile, 'utf8').catch(() => '');
    process.kill(-child.pid!, 'SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    // SIGKILL takes effect asynchronously: poll /proc until the grandchild is a zombie or gone (bounded).
    const state = () => readFile(`/proc/${grandchild.trim()}/stat`, 'utf8').catch(() => 'gone');
    let seen = await state();
    for (let i = 0; i < 1000 && !/^gone$|\) Z /.test(seen); i++) {
      await new Promise((resolve) => setImmediate(resolve));
      seen = await state();
    }
    expect(seen).toMatch(/^gone$|\) Z /);
  });

  it('fails with ENOENT for a missing program and for a missing directory', async () => {
    const missing = await startJobChild(
      {
        invocation: { file: join(dir, 'no-such-program'), args: [], windowsVerbatimArguments: false },
        cwd: dir,
      },
      nodeSpawn,
    );
    const [err] = (await once(missing, 'error')) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ENOENT');
    const nowhere = await startJobChild(shell('true', { cwd: join(dir, 'no-such-dir') }), nodeSpawn);
    const [cwdErr] = (await once(nowhere, 'error')) as [NodeJS.ErrnoException];
    expect(cwdErr.code).toBe('ENOENT');
  });

  it('passes large output whole', async () => {
    const child = await startJobChild(shell('head -c 3000000 /dev/zero | tr "\\0" x'), nodeSpawn);
    const { stdout, code } = await finish(child);
    expect(code).toBe(0);
    expect(stdout.length).toBe(3_000_000);
  });
});
