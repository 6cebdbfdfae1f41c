import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { CLIENT_ID_FILE, loadOrCreateClientId } from '../src/config/client-id.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-id-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

test('generates an id once, keeps it in the data dir with mode 0600, and returns it again', async () => {
  const dataDir = join(dir, 'nested', 'data');
  const first = await loadOrCreateClientId(dataDir);
  expect(first).toMatch(/^[0-9a-f-]{36}$/);
  expect(await loadOrCreateClientId(dataDir)).toBe(first);
  const path = join(dataDir, CLIENT_ID_FILE);
  expect((await readFile(path, 'utf8')).trim()).toBe(first);
  if (process.platform !== 'win32') {
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
  }
});

test('agents starting together agree on one id and leave no draft files', async () => {
  const ids = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateClientId(dir)));
  expect(new Set(ids).size).toBe(1);
  const { readdir } = await import('node:fs/promises');
  expect(await readdir(dir)).toEqual([CLIENT_ID_FILE]);
});

test('an id written by hand is used as it is', async () => {
  await writeFile(join(dir, CLIENT_ID_FILE), '  my-server \n');
  expect(await loadOrCreateClientId(dir)).toBe('my-server');
});

test('an empty id file is an error that says what to do', async () => {
  await writeFile(join(dir, CLIENT_ID_FILE), '\n');
  await expect(loadOrCreateClientId(dir)).rejects.toThrow(/is empty; delete it/);
});
