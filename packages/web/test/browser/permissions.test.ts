/**
 * Group permissions in the console against a real svcd with database user tables and group_details: the admin
 * grants a group permissions with checkboxes on the Users page; a member sees only the menu pages and actions
 * their permissions allow; the admin deletes the group.
 */
import { describe, expect, test } from 'vitest';
import { useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({ suite: 'permissions', userTables: true });

const PAT = { username: 'pat', password: 'pat-secret-123' };
const nav = () => h.page.getByRole('navigation', { name: 'Pages' });
const dialog = () => h.page.getByRole('dialog');
const groupRow = (name: string) =>
  h.page.getByTestId('user-group-row').filter({ has: h.page.getByRole('cell', { name, exact: true }) });

async function logOut(): Promise<void> {
  await h.page.getByRole('button', { name: 'Log out' }).click();
  await h.page.waitForURL((url) => url.pathname === '/login');
}

describe('group permissions in the console', () => {
  test('the admin grants a group permissions with checkboxes', async () => {
    const created = await h.api.post(
      '/users',
      { username: PAT.username, password: PAT.password, groups: ['Helpdesk'] },
      { auth: h.adminAuth },
    );
    expect(created.status).toBe(201);
    await h.page.goto(`${h.origin}/users`);
    await h.page.getByRole('heading', { level: 2, name: 'User groups' }).waitFor();
    await groupRow('Administrators').waitFor();
    expect(await groupRow('Helpdesk').textContent()).toContain('none');

    await h.page.getByRole('button', { name: 'Edit the permissions of Helpdesk' }).click();
    await dialog().getByRole('checkbox', { name: 'tunnels' }).check();
    await dialog().getByRole('checkbox', { name: 'auditlog' }).check();
    await dialog().getByRole('button', { name: 'Save permissions' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => groupRow('Helpdesk').textContent()).toMatch(/tunnels.*auditlog/);

    const stored = await h.api.get('/user-groups/Helpdesk', { auth: h.adminAuth });
    expect(stored.json.data.permissions).toMatchObject({ tunnels: true, auditlog: true, commands: false });
  });

  test('a member sees only the pages and actions their permissions allow', async () => {
    await logOut();
    await h.login(PAT.username, PAT.password);
    await nav().getByRole('link', { name: 'Tunnels' }).waitFor();
    const links = await nav().getByRole('link').allTextContents();
    expect(links).toEqual([
      'Dashboard',
      'Clients',
      'Client groups',
      'Tunnels',
      'API tokens',
      'Audit log',
      'My account',
    ]);
    await nav().getByRole('link', { name: 'Client groups' }).click();
    await h.page.getByRole('heading', { level: 1, name: 'Client groups' }).waitFor();
    expect(await h.page.getByRole('link', { name: 'New group' }).count()).toBe(0);
    // The API stays the control: what the console hides is refused.
    const refused = await h.api.post(
      '/client-groups',
      { id: 'g1' },
      { auth: { basic: [PAT.username, PAT.password] } },
    );
    expect([refused.status, refused.json.errors[0].code]).toEqual([403, 'ERR_PERMISSION_REQUIRED']);
  });

  test('the admin deletes the group: its members leave it', async () => {
    await logOut();
    await h.login();
    await h.page.goto(`${h.origin}/users`);
    await groupRow('Helpdesk').waitFor();
    await h.page.getByRole('button', { name: 'Delete the group Helpdesk' }).click();
    await dialog().getByRole('button', { name: 'Delete group' }).click();
    await groupRow('Helpdesk').waitFor({ state: 'detached' });
    const users = await h.api.get('/users', { auth: h.adminAuth });
    const pat = (users.json.data as { username: string; groups: string[] }[]).find(
      (u) => u.username === 'pat',
    );
    expect(pat?.groups).toEqual([]);
  });
});
