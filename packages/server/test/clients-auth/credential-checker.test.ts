import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { systemClock } from '../../src/core/auth/ports.js';
import {
  ClientCredentialChecker,
  passwordsMatch,
  refuseAllClients,
} from '../../src/core/clients-auth/credential-checker.js';
import { createStaticClientAuthStore } from '../../src/storage/static-client-auth-store.js';
import { FileClientAuthStore } from '../../src/storage/file-client-auth-store.js';

let dir: string;
let store: FileClientAuthStore;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'client-auth-'));
  await writeFile(join(dir, 'c.json'), JSON.stringify({ agent1: 'agent1-password' }));
  store = await FileClientAuthStore.open(join(dir, 'c.json'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

test('passwordsMatch compares content, not just length', () => {
  expect(passwordsMatch('secret-1', 'secret-1')).toBe(true);
  expect(passwordsMatch('secret-1', 'secret-2')).toBe(false);
  expect(passwordsMatch('', '')).toBe(true);
  expect(passwordsMatch('secret', 'secret-longer')).toBe(false);
});

test('a right password is accepted; a wrong one blocks that id for client_login_wait only', async () => {
  let now = Date.parse('2030-01-01T00:00:00Z');
  const auth = new ClientCredentialChecker(store, 300, { now: () => new Date(now) });
  expect(await auth.check('agent1', 'agent1-password')).toBe('ok');
  expect(await auth.check('agent1', 'wrong')).toBe('wrong_credentials');
  expect(await auth.check('agent1', 'agent1-password')).toBe('throttled');
  expect(await auth.check('unknown-id', 'agent1-password')).toBe('wrong_credentials');
  now += 299;
  expect(await auth.check('agent1', 'agent1-password')).toBe('throttled');
  now += 1;
  expect(await auth.check('agent1', 'agent1-password')).toBe('ok');
  expect(await auth.check('agent1', 'agent1-password')).toBe('ok');
});

test('an empty password never matches a missing credential', async () => {
  const auth = new ClientCredentialChecker(store, 0, systemClock);
  expect(await auth.check('nobody', '')).toBe('wrong_credentials');
});

test('a malformed credential file stops the start naming [server] auth_file', async () => {
  await writeFile(join(dir, 'bad.json'), JSON.stringify({ ok: 'fine-password', bad: 42 }));
  await expect(FileClientAuthStore.open(join(dir, 'bad.json'))).rejects.toThrow(
    /\[server\] auth_file: .*bad/,
  );
  await writeFile(join(dir, 'broken.json'), '{"a": ');
  await expect(FileClientAuthStore.open(join(dir, 'broken.json'))).rejects.toThrow(/not valid JSON/);
});

test('the static credential is split at the first colon; verify answers the gateway port', async () => {
  const checker = new ClientCredentialChecker(
    createStaticClientAuthStore({ id: 'client-1', password: 'pass:with:colons' }),
    0,
    systemClock,
  );
  expect(await checker.verify('client-1', 'pass:with:colons')).toBe(true);
  expect(await checker.verify('client-1', 'pass')).toBe(false);
  expect(await checker.verify('client-2', 'pass:with:colons')).toBe(false);
  expect(await refuseAllClients.verify('client-1', 'pass:with:colons', '127.0.0.1')).toBe(false);
});
