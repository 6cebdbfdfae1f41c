import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import semver from 'semver';
import { describe, expect, test } from 'vitest';

const root = new URL('../', import.meta.url);
const readJson = async (file: string): Promise<unknown> =>
  JSON.parse(await readFile(new URL(file, root), 'utf8')) as unknown;

interface LockPackage {
  engines?: { node?: string };
}

/** The Node.js version the README promises, e.g. "20.19" from "Node.js 20.19+". */
async function readmeNodeVersion(): Promise<string> {
  const readme = await readFile(new URL('README.md', root), 'utf8');
  const match = /Node\.js (\d+\.\d+)\+/.exec(readme);
  if (!match?.[1]) throw new Error('README.md no longer states "Node.js <major>.<minor>+"');
  return `${match[1]}.0`;
}

describe('installing on the Node.js version the README names', () => {
  test('package.json engines start at the README version', async () => {
    const version = await readmeNodeVersion();
    const pkg = (await readJson('package.json')) as { engines: { node: string } };
    expect(semver.minVersion(pkg.engines.node)?.version).toBe(version);
  });

  test('every locked package accepts that version, so `npm ci` prints no engine warning', async () => {
    const version = await readmeNodeVersion();
    const lock = (await readJson('package-lock.json')) as { packages: Record<string, LockPackage> };
    const refusing = Object.entries(lock.packages)
      .filter(([, entry]) => entry.engines?.node !== undefined)
      .filter(([, entry]) => !semver.satisfies(version, entry.engines?.node ?? '*'))
      .map(([path, entry]) => `${path} needs node ${entry.engines?.node ?? ''}`);
    expect(refusing).toEqual([]);
  });
});

describe('what a newcomer copies from the README', () => {
  test('every curl command whose URL holds [ ] passes -g, or curl prints nothing and exits 3', async () => {
    const readme = await readFile(new URL('README.md', root), 'utf8');
    const curls = readme.split('\n').filter((line) => /\bcurl\b.*https?:\/\/\S*\[/.test(line));
    expect(curls.length).toBeGreaterThan(0);
    expect(curls.filter((line) => !/\bcurl\b(?:\s+-\S+)*\s+-g\b/.test(line))).toEqual([]);
  });

  test('the folders svcd quickstart and svc create in the repository are ignored by git', async () => {
    const cwd = fileURLToPath(root);
    for (const path of ['data/svcd.conf', 'svc-data/client-id'])
      await expect(promisify(execFile)('git', ['check-ignore', '-q', path], { cwd })).resolves.toBeDefined();
  });
});
