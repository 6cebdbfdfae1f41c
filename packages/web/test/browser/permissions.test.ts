/**
 * Group permissions in the console against a real svcd with database user tables and group_details: the admin
 * grants a group permissions with checkboxes on the Users page and limits it to client groups with command and
 * tunnel rules (svcd's refusals shown); a member sees only the menu pages and actions their permissions allow,
 * and svcd still refuses what is hidden; the admin deletes the group.
 */
import { describe, expect, test } from 'vitest';
import { useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({
  suite: 'permissions',
  userTables: true,
  agents: [{ id: 'perm-1', name: 'perm one', tags: ['web'] }],
});

const PAT = { username: 'pat', password: 'pat-secret-123' };
/** In Viewers: the scheduler permission only (no commands, scripts, tunnels, clients, client-groups). */
const SAM = { username: 'sam', password: 'sam-secret-123' };
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

    await h.page.getByRole('button', { name: 'Edit the group Helpdesk' }).click();
    await dialog().getByRole('checkbox', { name: 'tunnels' }).check();
    await dialog().getByRole('checkbox', { name: 'auditlog' }).check();
    await dialog().getByRole('button', { name: 'Save group' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect.poll(() => groupRow('Helpdesk').textContent()).toMatch(/tunnels.*auditlog/);

    const stored = await h.api.get('/user-groups/Helpdesk', { auth: h.adminAuth });
    expect(stored.json.data.permissions).toMatchObject({ tunnels: true, auditlog: true, commands: false });
  });

  test('the admin limits the group to a client group with command and tunnel rules', async () => {
    const web = await h.api.post(
      '/client-groups',
      { id: 'web', params: { tag: ['web'] } },
      { auth: h.adminAuth },
    );
    expect(web.status).toBe(201);
    await h.page.getByRole('button', { name: 'Edit the group Helpdesk' }).click();
    await dialog().getByRole('switch', { name: 'Limit members to some client groups' }).check();
    const tags = async (label: string, values: string[]) => {
      const input = dialog().getByLabel(label, { exact: true });
      for (const value of values) {
        await input.fill(value);
        await input.press('Enter');
      }
    };
    await tags('Client groups', ['web']);
    await dialog().getByRole('textbox', { name: 'Allowed commands' }).fill('^uptime\n^df');
    // A pattern whose matching time could run away: svcd refuses it and says why.
    await dialog().getByRole('textbox', { name: 'Denied commands' }).fill('(a+)+$');
    await dialog().getByRole('button', { name: 'Save group' }).click();
    const refusal = dialog().getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/commands_restricted/);
    await dialog().getByRole('textbox', { name: 'Denied commands' }).fill('-h');
    await tags('Allow: schemes', ['ssh']);
    await tags('Allow: remote ports', ['22', '8000-8100']);
    await tags('Deny: ACL networks', ['192.0.2.0/24']);
    await dialog().getByRole('button', { name: 'Save group' }).click();
    await dialog().waitFor({ state: 'detached' });
    await expect
      .poll(() => groupRow('Helpdesk').textContent(), { timeout: 10_000 })
      .toContain('clients of web; commands restricted; tunnels restricted');

    const stored = (await h.api.get('/user-groups/Helpdesk', { auth: h.adminAuth })).json.data;
    expect(stored).toMatchObject({
      client_groups: ['web'],
      commands_restricted: { allow: ['^uptime', '^df'], deny: ['-h'] },
      tunnels_restricted: {
        allow: { scheme: ['ssh'], remote: [22, '8000-8100'] },
        deny: { acl: ['192.0.2.0/24'] },
      },
      permissions: { tunnels: true, auditlog: true },
    });
    // Opened again, the editor shows what is stored.
    await h.page.getByRole('button', { name: 'Edit the group Helpdesk' }).click();
    expect(await dialog().getByRole('textbox', { name: 'Allowed commands' }).inputValue()).toBe(
      '^uptime\n^df',
    );
    expect(
      await dialog().getByRole('switch', { name: 'Limit members to some client groups' }).isChecked(),
    ).toBe(true);
    await h.page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'detached' });
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

  test('without commands, scripts and tunnels the run and tunnel actions are absent, and svcd refuses them', async () => {
    const group = await h.api.put(
      '/user-groups/Viewers',
      { permissions: { scheduler: true } },
      { auth: h.adminAuth },
    );
    expect(group.status).toBe(200);
    const user = await h.api.post('/users', { ...SAM, groups: ['Viewers'] }, { auth: h.adminAuth });
    expect(user.status).toBe(201);
    await logOut();
    await h.login(SAM.username, SAM.password);
    // The menu follows GET /me: once Schedules shows, the pages know the permissions too.
    await nav().getByRole('link', { name: 'Schedules' }).waitFor();
    expect(await nav().getByRole('link', { name: 'Runs' }).count()).toBe(0);
    expect(await nav().getByRole('link', { name: 'Tunnels' }).count()).toBe(0);

    await h.page.goto(`${h.origin}/clients/perm-1`);
    await h.page.getByRole('heading', { level: 1, name: 'perm one' }).waitFor();
    await nav().getByRole('link', { name: 'Schedules' }).waitFor();
    expect(await h.page.getByRole('heading', { name: 'Run a command' }).count()).toBe(0);
    expect(await h.page.getByRole('heading', { level: 2, name: 'Tunnels' }).count()).toBe(0);

    await nav().getByRole('link', { name: 'Clients' }).click();
    await h.page.getByRole('checkbox', { name: 'Select perm one' }).check();
    await h.page.getByTestId('bulk-actions').waitFor();
    expect(await h.page.getByRole('button', { name: 'Run a command or script…' }).count()).toBe(0);
    expect(await h.page.getByRole('button', { name: 'Remove disconnected clients' }).count()).toBe(0);

    await h.page.goto(`${h.origin}/runs/new`);
    await h.page.getByRole('heading', { level: 1, name: 'New run' }).waitFor();
    await nav().getByRole('link', { name: 'Schedules' }).waitFor();
    expect(await h.page.getByRole('button', { name: 'Start the run' }).isDisabled()).toBe(true);
    await nav().getByRole('link', { name: 'Schedules' }).click();
    await h.page.getByRole('link', { name: 'New schedule' }).waitFor();

    // Hiding is not the control: svcd refuses the same actions.
    const auth = { basic: [SAM.username, SAM.password] as [string, string] };
    const command = await h.api.post('/clients/perm-1/commands', { command: 'uptime' }, { auth });
    const tunnel = await h.api.request('PUT', '/clients/perm-1/tunnels?remote=22', { auth });
    for (const refused of [command, tunnel])
      expect([refused.status, refused.json.errors[0].code]).toEqual([403, 'ERR_PERMISSION_REQUIRED']);

    // The admin sees every action.
    await logOut();
    await h.login();
    await h.page.goto(`${h.origin}/clients/perm-1`);
    await h.page.getByRole('heading', { name: 'Run a command' }).waitFor();
    await h.page.getByRole('heading', { level: 2, name: 'Tunnels' }).waitFor();
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
