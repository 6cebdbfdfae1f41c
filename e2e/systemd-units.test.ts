import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXIT_CONFIG, EXIT_USAGE } from '../packages/platform/src/exit-codes.js';
import { RECOMMENDED_OPEN_FILES } from '../packages/server/src/cli/open-file-limit.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const UNITS = { svcd: 'packages/server/bin/svcd.js', svc: 'packages/agent/bin/svc.js' };
const unitPath = (name: string) => join(root, 'packaging/systemd', `${name}.service`);

const ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((path) => existsSync(path));

/** `systemd-analyze verify`: exit code and everything it printed. */
async function verify(file: string): Promise<{ code: number; output: string }> {
  if (!ANALYZE)
    throw new Error(
      'systemd-analyze not found in /usr/bin or /bin: install the Debian package `systemd` (.ci/run does) to verify the units',
    );
  try {
    const { stdout, stderr } = await promisify(execFile)(ANALYZE, ['verify', file]);
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe('systemd-analyze verify', () => {
  let dir: string;
  beforeAll(async () => (dir = await mkdtemp(join(tmpdir(), 'svc-units-'))));
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test.each(Object.keys(UNITS))('%s.service passes without a warning', async (name) => {
    expect(await verify(unitPath(name))).toEqual({ code: 0, output: '' });
  });

  test('catches a broken unit, so the passes above mean something', async () => {
    const broken = join(dir, 'broken.service');
    const text = await readFile(unitPath('svcd'), 'utf8');
    await writeFile(broken, text.replace('ExecStart=/usr/bin/node', 'ExecStart=/usr/bin/no-such-node'));
    const result = await verify(broken);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('/usr/bin/no-such-node');
  });
});

describe.each(Object.entries(UNITS))('%s.service', (name, bin) => {
  const settings = async () => {
    const text = await readFile(unitPath(name), 'utf8');
    const lines = text.split('\n').filter((line) => /^[A-Za-z]+=/.test(line));
    return new Map(
      lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  };

  test('runs the repository executable built in /opt/svc as its own unprivileged user', async () => {
    const unit = await settings();
    expect(unit.get('ExecStart')).toMatch(
      new RegExp(`^/usr/bin/node /opt/svc/${bin} -c /etc/${name}/${name}\\.conf$`),
    );
    expect(existsSync(join(root, bin))).toBe(true);
    expect(unit.get('User')).toBe(name);
    expect(unit.get('StateDirectory')).toBe(name);
  });

  test('restarts after a failure but not after a configuration or command-line error', async () => {
    const unit = await settings();
    expect(unit.get('Restart')).toBe('on-failure');
    expect(unit.get('RestartPreventExitStatus')?.split(' ').map(Number).sort()).toEqual(
      [EXIT_USAGE, EXIT_CONFIG].sort(),
    );
  });

  test('sets a fixed malloc mmap threshold for the agent only', async () => {
    const unit = await settings();
    expect(unit.get('Environment')).toBe(name === 'svc' ? 'MALLOC_MMAP_THRESHOLD_=131072' : undefined);
  });

  test('raises the open-file limit: svcd to what it recommends (one descriptor per agent), the agent for tunnels', async () => {
    const unit = await settings();
    expect(Number(unit.get('LimitNOFILE'))).toBe(name === 'svcd' ? RECOMMENDED_OPEN_FILES : 65_536);
  });

  test('is hardened', async () => {
    const unit = await settings();
    for (const key of ['NoNewPrivileges', 'ProtectHome', 'PrivateTmp', 'RestrictSUIDSGID'])
      expect(unit.get(key), key).toBe('yes');
    expect(unit.get('ProtectSystem')).toMatch(/^(strict|full)$/);
  });
});
