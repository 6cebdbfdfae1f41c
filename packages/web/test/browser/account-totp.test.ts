/**
 * The authenticator app from My account, against a real svcd with TOTP login on: the admin enrols at the first
 * login, deletes the secret on My account, sets up a new one there from its QR code, and logs in with it.
 */
import { describe, expect, test } from 'vitest';
import { foreignRequests, useConsoleHarness } from '../../../../test-support/console-harness.js';
import { E2E_ADMIN } from '../../../../test-support/e2e-setup.js';
import { awayFromStepEdge, currentStep, totpCode } from '../../../../test-support/totp.js';

const h = useConsoleHarness({ suite: 'account-totp', api: ['totp_enabled = true'], login: false });

/** Password, then the code of `secret` (or, without one, the enrolment's QR code and its secret). */
async function loginWithApp(secret?: string): Promise<string> {
  const { page } = h;
  await page.goto(`${h.origin}/login`);
  await page.getByLabel('Username').fill(E2E_ADMIN.username);
  await page.getByRole('textbox', { name: 'Password' }).fill(E2E_ADMIN.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  const code = page.getByLabel('Authenticator code');
  await code.waitFor();
  const used = secret ?? (await page.getByTestId('totp-secret').textContent()) ?? '';
  await awayFromStepEdge();
  await code.fill(totpCode(used, currentStep()));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.waitForURL((url) => url.pathname !== '/login');
  return used;
}

describe('the authenticator app on My account', () => {
  test('delete the secret, set up a new one from its QR code, and log in with it', async () => {
    const first = await loginWithApp();
    expect(first).toMatch(/^[A-Z2-7]{16,}$/);
    await h.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'My account' }).click();
    await h.page.getByRole('heading', { level: 1, name: 'My account' }).waitFor();
    const state = h.page.getByTestId('totp-state');
    await expect.poll(() => state.textContent()).toBe('set up');

    await h.page.getByRole('button', { name: 'Delete the secret' }).click();
    await h.page.getByRole('dialog').getByRole('button', { name: 'Delete secret' }).click();
    await expect.poll(() => state.textContent()).toBe('not set up');

    await h.page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await h.page.getByRole('img', { name: 'QR code of the authenticator-app secret' }).waitFor();
    const second = (await h.page.getByTestId('totp-secret').textContent()) ?? '';
    expect(second).toMatch(/^[A-Z2-7]{16,}$/);
    expect(second).not.toBe(first);
    await expect.poll(() => state.textContent()).toBe('set up');
    await h.page.getByRole('button', { name: 'Hide the code' }).click();
    expect(await h.page.getByTestId('totp-secret').count()).toBe(0);

    await h.page.getByRole('button', { name: 'Log out' }).click();
    await h.page.waitForURL((url) => url.pathname === '/login');
    // The next login asks for a code of the new secret, no enrolment.
    await loginWithApp(second);
    expect(await h.page.getByTestId('totp-secret').count()).toBe(0);
  }, 45_000);

  test('an administrator resets a user’s app from Users; the next login sets one up again', async () => {
    await h.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Users' }).click();
    await h.page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    // The 2FA column: the admin's app is set up (the first test enrolled a new one).
    const adminRow = h.page.getByTestId('user-row').filter({ hasText: E2E_ADMIN.username });
    await expect.poll(() => adminRow.getByTestId('user-2fa').textContent()).toBe('authenticator app');
    await h.page
      .getByRole('button', { name: `Reset the authenticator app of ${E2E_ADMIN.username}` })
      .click();
    await h.page.getByRole('dialog').getByRole('button', { name: 'Reset app' }).click();
    await expect
      .poll(() => h.page.getByTestId('write-outcome').textContent())
      .toMatch(/new app at their next login/);
    await expect
      .poll(() => adminRow.getByTestId('user-2fa').textContent())
      .toBe('authenticator app not set up');
    await h.page.getByRole('button', { name: `Edit ${E2E_ADMIN.username}` }).click();
    await expect
      .poll(() =>
        h.page
          .getByRole('dialog', { name: `Edit ${E2E_ADMIN.username}` })
          .getByTestId('user-2fa')
          .textContent(),
      )
      .toBe('authenticator app not set up');
    await h.page.keyboard.press('Escape');
    await h.page.getByRole('dialog', { name: `Edit ${E2E_ADMIN.username}` }).waitFor({ state: 'detached' });
    await h.page.getByRole('button', { name: 'Log out' }).click();
    await h.page.waitForURL((url) => url.pathname === '/login');
    // No secret given: the login shows the enrolment (QR code and a new secret) again.
    expect(await loginWithApp()).toMatch(/^[A-Z2-7]{16,}$/);
  }, 45_000);

  test('asked only its own origin, and the CSP never had to block', () => {
    expect(foreignRequests(h)).toEqual([]);
    expect(h.cspErrors).toEqual([]);
  });
});
