/**
 * Accounts in the console against a real svcd (users in a file, agent credentials in a file, no agents): the admin
 * adds a user, creates and revokes an API token and manages client credentials; the new user sees a non-admin's
 * console, changes their password and keeps working while the session renews itself; the admin deletes the user.
 */
import { describe, expect, test } from 'vitest';
import { foreignRequests, useConsoleHarness } from '../../../../test-support/console-harness.js';
import { E2E_ADMIN } from '../../../../test-support/e2e-setup.js';

const h = useConsoleHarness({ suite: 'admin', agentAuth: 'file' });

/** The tab's sessionStorage, inside page functions (the tests compile without the DOM library). */
interface PageGlobals {
  sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
}

const USER = { username: 'olga', password: 'olga-secret-1', newPassword: 'olga-better-secret-2' };

/** Sends SIGUSR1 and waits for svcd to say it read the user file again (writes wait there until then). */
async function reloadUsers(): Promise<void> {
  const before = h.svcd.stdoutLines.length;
  const reloaded = h.svcd.waitForLine(
    (line) => line.includes('user file reloaded') && h.svcd.stdoutLines.indexOf(line) >= before,
  );
  h.svcd.child.kill('SIGUSR1');
  await reloaded;
}

const nav = () => h.page.getByRole('navigation', { name: 'Pages' });
const dialog = () => h.page.getByRole('dialog');
const heading = (name: string) => h.page.getByRole('heading', { level: 1, name }).waitFor();

async function openFromMenu(label: string, path: string): Promise<void> {
  await nav().getByRole('link', { name: label }).click();
  await h.page.waitForURL((url) => url.pathname === path);
}

async function logOut(): Promise<void> {
  await h.page.getByRole('button', { name: 'Log out' }).click();
  await h.page.waitForURL((url) => url.pathname === '/login');
}

describe('accounts in the console', () => {
  test('the admin adds a user with a group; the user file takes it on reload', async () => {
    await openFromMenu('Users', '/users');
    await heading('Users');
    await h.page.getByTestId('user-row').filter({ hasText: E2E_ADMIN.username }).waitFor();
    await h.page.getByRole('button', { name: 'Add user' }).click();
    await dialog().getByLabel('Username').fill(USER.username);
    await dialog().getByRole('textbox', { name: 'Password' }).fill(USER.password);
    await dialog().getByLabel('Groups', { exact: true }).fill('Operators');
    await dialog().getByLabel('Groups', { exact: true }).press('Enter');
    await dialog().getByRole('button', { name: 'Create user' }).click();
    await expect.poll(() => h.page.getByTestId('write-outcome').textContent()).toMatch(/svcd reloads/);
    await reloadUsers();
    await h.page.reload();
    const row = h.page.getByTestId('user-row').filter({ hasText: USER.username });
    await row.waitFor();
    expect(await row.textContent()).toContain('Operators');
    // This svcd has no second factor: the 2FA column and the user's dialog say so.
    expect(await row.getByTestId('user-2fa').textContent()).toBe('off on this server');

    // Edit: one more group (the list replaces the user's groups as a whole).
    await h.page.getByRole('button', { name: `Edit ${USER.username}` }).click();
    expect(await dialog().getByTestId('user-2fa').textContent()).toBe('off on this server');
    await dialog().getByLabel('Groups', { exact: true }).fill('Auditors');
    await dialog().getByLabel('Groups', { exact: true }).press('Enter');
    await dialog().getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => h.page.getByTestId('write-outcome').textContent()).toMatch(/changed/);
    await reloadUsers();
    const saved = await h.api.get('/users', { auth: h.adminAuth });
    const olga = (saved.json.data as { username: string; groups: string[] }[]).find(
      (u) => u.username === USER.username,
    );
    expect(olga?.groups).toEqual(['Operators', 'Auditors']);
  });

  test('an API token: its secret is shown once, works against the API, and stops working when revoked', async () => {
    await openFromMenu('API tokens', '/tokens');
    await heading('API tokens');
    await h.page.getByTestId('tokens-empty').waitFor();
    await h.page.getByRole('button', { name: 'Create token' }).click();
    await dialog().getByLabel('Name').fill('nightly report');
    await dialog().getByRole('button', { name: 'Create token' }).click();
    const secret = (await h.page.getByTestId('secret-once').textContent()) ?? '';
    expect(secret).toMatch(/^[A-Za-z0-9]{8}_\S+$/);
    const asToken = { auth: { basic: [E2E_ADMIN.username, secret] as [string, string] } };
    expect((await h.api.get('/status', asToken)).status).toBe(200);
    // The default scope is read: writing is refused.
    expect((await h.api.post('/me/tokens', { name: 'x', scope: 'read' }, asToken)).status).toBe(403);

    await dialog().getByRole('button', { name: 'Done' }).click();
    await dialog().waitFor({ state: 'detached' });
    // Gone from the page and from the tab's storage once the dialog is closed.
    expect(await h.page.content()).not.toContain(secret);
    expect(
      await h.page.evaluate(() => JSON.stringify((globalThis as unknown as PageGlobals).sessionStorage)),
    ).not.toContain(secret);

    const row = h.page.getByTestId('token-row');
    await row.filter({ hasText: 'nightly report' }).waitFor();
    expect(await row.textContent()).toContain(secret.slice(0, 8));
    await h.page.getByRole('button', { name: 'Edit token nightly report' }).click();
    await dialog().getByLabel('Name').fill('weekly report');
    await dialog().getByRole('button', { name: 'Save' }).click();
    await row.filter({ hasText: 'weekly report' }).waitFor();
    // It was used above (GET /status): the list (read again after the save) says when.
    await expect.poll(() => row.getByTestId('token-last-used').textContent()).toMatch(/ago|now/);

    await h.page.getByRole('button', { name: 'Revoke token weekly report' }).click();
    await dialog().getByRole('button', { name: 'Revoke token' }).click();
    await h.page.getByTestId('tokens-empty').waitFor();
    expect((await h.api.get('/status', asToken)).status).toBe(401);
  });

  test('client credentials: add one with a generated password, shown once; delete it', async () => {
    await openFromMenu('Client credentials', '/credentials');
    await heading('Client credentials');
    await h.page.getByTestId('credential-row').filter({ hasText: 'agent' }).waitFor();
    await h.page.getByRole('button', { name: 'Add credential' }).click();
    await dialog().getByLabel('Client-auth id').fill('rack-7');
    await dialog().getByRole('button', { name: 'Generate' }).click();
    await dialog().getByRole('button', { name: 'Add credential' }).click();
    const shown = (await h.page.getByTestId('secret-once').textContent()) ?? '';
    expect(shown).toMatch(/^rack-7:[A-Za-z0-9]{24}$/);
    const stored = await h.api.get('/clients-auth/rack-7', { auth: h.adminAuth });
    expect(stored.json.data.password).toBe(shown.slice('rack-7:'.length));
    await dialog().getByRole('button', { name: 'Done' }).click();

    await h.page.getByRole('button', { name: 'Delete credential rack-7' }).click();
    await dialog().getByRole('button', { name: 'Delete credential' }).click();
    await h.page.getByRole('status').filter({ hasText: 'Credential rack-7 deleted' }).waitFor();
    // The list is read again after the status shows (under load it came a moment later: 2 rows counted).
    await expect.poll(() => h.page.getByTestId('credential-row').count()).toBe(1);
    expect((await h.api.get('/clients-auth/rack-7', { auth: h.adminAuth })).status).toBe(404);
  });

  test('a non-admin sees no admin pages in the menu, and their URLs show that they need Administrators', async () => {
    await logOut();
    await h.login(USER.username, USER.password);
    await nav().getByRole('link', { name: 'My account' }).waitFor();
    const labels = await nav().getByRole('link').allTextContents();
    expect(labels).toContain('API tokens');
    expect(labels).not.toContain('Users');
    expect(labels).not.toContain('Client credentials');
    for (const path of ['/users', '/credentials']) {
      await h.page.goto(`${h.origin}${path}`);
      const refusal = h.page.getByTestId('needs-admin');
      await refusal.waitFor();
      expect(await refusal.textContent()).toMatch(/needs the Administrators group/);
      expect(await h.page.getByRole('button', { name: /Add/ }).count()).toBe(0);
    }
  });

  test('my account: a wrong current password and a mistyped repeat are explained; the new password logs in', async () => {
    await h.page.getByTestId('current-user').click();
    await h.page.waitForURL((url) => url.pathname === '/account');
    await heading('My account');
    const current = h.page.getByLabel(/^Current password/);
    const next = h.page.getByLabel(/^New password/);
    const repeat = h.page.getByLabel('Repeat the new password');
    const submit = h.page.getByRole('button', { name: 'Change password' });
    const alert = h.page.getByRole('alert');

    await current.fill('not-my-password');
    await next.fill(USER.newPassword);
    await repeat.fill(USER.newPassword);
    await submit.click();
    await alert.filter({ hasText: 'The current password is not right' }).waitFor();

    await current.fill(USER.password);
    await repeat.fill(`${USER.newPassword}x`);
    await submit.click();
    await alert.filter({ hasText: 'The two new passwords differ' }).waitFor();

    await repeat.fill(USER.newPassword);
    await submit.click();
    await expect.poll(() => h.page.getByTestId('write-outcome').textContent()).toMatch(/svcd reloads/);
    await reloadUsers();
    await logOut();
    await h.page.getByLabel('Username').fill(USER.username);
    await h.page.getByRole('textbox', { name: 'Password' }).fill(USER.password);
    await h.page.getByRole('button', { name: 'Log in' }).click();
    await h.page.getByTestId('login-error').waitFor();
    await h.login(USER.username, USER.newPassword);
    await nav().getByRole('link', { name: 'My account' }).waitFor();
  });

  test('a session renews itself before its token ends, on the same page; the old token is revoked', async () => {
    // A session whose token lives 20 s, as one that started almost a working day ago would be near its end.
    const login = await h.api.get('/login?token-lifetime=20', {
      auth: { basic: [USER.username, USER.newPassword] },
    });
    const oldToken = login.json.data.token as string;
    await h.page.evaluate((token) => {
      const claims = JSON.parse(atob(token.split('.')[1] ?? '')) as { iat: number; exp: number };
      (globalThis as unknown as PageGlobals).sessionStorage.setItem(
        'svc.session',
        JSON.stringify({
          token,
          username: 'olga',
          expiresAt: claims.exp * 1000,
          issuedAt: claims.iat * 1000,
        }),
      );
    }, oldToken);
    await h.page.goto(`${h.origin}/tokens`);
    await heading('API tokens');
    // Renewal comes halfway through a token this short (two minutes before the end of a long one).
    await h.page.waitForFunction(
      (old) =>
        !((globalThis as unknown as PageGlobals).sessionStorage.getItem('svc.session') ?? old).includes(old),
      oldToken,
      { timeout: 20_000 },
    );
    const renewed = JSON.parse(
      (await h.page.evaluate(() =>
        (globalThis as unknown as PageGlobals).sessionStorage.getItem('svc.session'),
      )) ?? '{}',
    ) as { token: string; username: string };
    expect(renewed.username).toBe(USER.username);
    expect((await h.api.get('/me', { auth: { bearer: renewed.token } })).json.data.username).toBe(
      USER.username,
    );
    expect((await h.api.get('/me', { auth: { bearer: oldToken } })).status).toBe(401);
    expect(new URL(h.page.url()).pathname).toBe('/tokens');
    expect(await h.page.getByTestId('renewal-failed').count()).toBe(0);
  }, 45_000);

  test('the admin deletes the user after confirming', async () => {
    await logOut();
    await h.login();
    await openFromMenu('Users', '/users');
    await h.page.getByRole('button', { name: `Delete ${USER.username}` }).click();
    await dialog().getByRole('button', { name: 'Delete user' }).click();
    await expect.poll(() => h.page.getByTestId('write-outcome').textContent()).toMatch(/deleted/);
    await reloadUsers();
    await h.page.reload();
    await h.page.getByTestId('user-row').filter({ hasText: E2E_ADMIN.username }).waitFor();
    expect(await h.page.getByTestId('user-row').count()).toBe(1);
  });

  test('asked only its own origin, and the CSP never had to block', () => {
    expect(foreignRequests(h)).toEqual([]);
    expect(h.cspErrors).toEqual([]);
  });
});
