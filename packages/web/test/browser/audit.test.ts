/**
 * The audit page against a real svcd (no agents): the admin's login and a write are listed, the filters live in
 * the URL, and the CSV export downloads the matching records.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, test } from 'vitest';
import { useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({ suite: 'audit' });

describe('audit log page', () => {
  test('lists records newest first, filters through the URL and exports CSV', async () => {
    // A write and a refused login to look for.
    const created = await h.api.post(
      '/me/views',
      { name: 'audited view', page: 'clients' },
      { auth: h.adminAuth },
    );
    expect(created.status, created.text).toBe(201);
    expect((await h.api.get('/login', { auth: { basic: ['mallory', 'wrong'] } })).status).toBe(401);

    await h.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Audit log' }).click();
    await h.page.waitForURL((url) => url.pathname === '/audit');
    await h.page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await h.page.getByTestId('audit-row').filter({ hasText: 'auth.user.me.view' }).waitFor();
    await h.page.getByTestId('audit-row').filter({ hasText: 'mallory' }).waitFor();

    await h.page.getByLabel('User').fill('mallory');
    await h.page.getByRole('button', { name: 'Filter' }).click();
    await h.page.waitForURL((url) => url.searchParams.get('username') === 'mallory');
    await expect.poll(() => h.page.getByTestId('audit-count').textContent()).toBe('1 record');
    expect(await h.page.getByTestId('audit-row').textContent()).toContain('refused');

    // The URL alone restores the view.
    await h.page.goto(`${h.origin}/audit?username=nobody-at-all`);
    await h.page.getByTestId('audit-empty').waitFor();
    await h.page.goto(`${h.origin}/audit?username=mallory`);
    await h.page.getByTestId('audit-row').waitFor();

    const download = h.page.waitForEvent('download');
    await h.page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await (await download).path();
    const lines = (await readFile(file, 'utf8')).trim().split('\r\n');
    expect(lines[0]?.startsWith('timestamp,username,remote_ip,application,action,outcome')).toBe(true);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('mallory');
    expect(h.cspErrors).toEqual([]);
  });
});
