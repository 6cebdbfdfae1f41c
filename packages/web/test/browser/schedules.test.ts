/**
 * The Schedules area in Chromium against a real svcd: the empty list says what to do, creating shows svcd's cron
 * error for a bad expression and then the schedule with the next run svcd computed, editing replaces it (the
 * next run moves), the firings list says it has not fired yet, and deleting asks first.
 *
 * A real firing is not driven here: svcd fires on its own clock once a minute, and the injectable clock exists
 * only in-process (packages/server/test/api/schedules.test.ts fires, skips and misses with it). The page's
 * history rows are therefore checked for their empty state and counts, next_run_at against svcd's answer.
 */
import { describe, expect, test } from 'vitest';
import { seriousAxeViolations } from '../../../../test-support/browser.js';
import { useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({ suite: 'schedules' });

const idInUrl = () => /\/schedules\/([^/?#]+)$/.exec(new URL(h.page.url()).pathname)?.[1] ?? '';

async function nextRunOf(id: string): Promise<string> {
  const res = await h.api.get(`/schedules/${id}`, { auth: h.adminAuth });
  expect(res.status).toBe(200);
  return (res.json as { data: { next_run_at: string } }).data.next_run_at;
}

describe('schedules', () => {
  let id = '';

  test('the empty list says how to start; a bad cron shows svcd’s error naming the field', async () => {
    await h.page.goto(`${h.origin}/schedules`);
    await h.page.getByTestId('schedules-empty').waitFor();
    await h.page.getByRole('link', { name: 'New schedule' }).click();
    await h.page.getByRole('heading', { level: 1, name: 'New schedule' }).waitFor();
    const browserZone = await h.page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    await expect(h.page.getByRole('textbox', { name: 'Time zone' }).inputValue()).resolves.toBe(browserZone);

    await h.page.getByRole('textbox', { name: 'Name' }).fill('nightly uptime');
    await h.page.getByRole('textbox', { name: 'Cron expression' }).fill('61 * * * *');
    await h.page.getByRole('textbox', { name: 'Command' }).fill('uptime');
    await h.page.getByText('Tags', { exact: true }).click();
    await h.page.getByRole('textbox', { name: 'Tags' }).fill('web');
    await h.page.getByRole('button', { name: 'Create the schedule' }).click();
    const alert = h.page.getByRole('alert').filter({ hasText: 'The schedule was not saved' });
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toContain('minute: 61 is out of range 0-59');
    expect(h.page.url()).toMatch(/\/schedules\/new$/);
  });

  test('a good cron creates it; its page shows the next run svcd computed and no firing yet', async () => {
    await h.page.getByRole('textbox', { name: 'Cron expression' }).fill('30 2 * * *');
    await h.page.getByRole('textbox', { name: 'Time zone' }).fill('Europe/Berlin');
    await h.page.getByRole('button', { name: 'Create the schedule' }).click();
    await h.page.waitForURL((url) => /^\/schedules\/(?!new$)[^/]+$/.test(url.pathname));
    id = idInUrl();
    await h.page.getByRole('heading', { level: 1, name: 'nightly uptime' }).waitFor();
    const next = await nextRunOf(id);
    // 02:30 in Berlin is 00:30 or 01:30 UTC depending on daylight saving.
    expect(next).toMatch(/T0[01]:30:00/);
    await expect(
      h.page.getByTestId('schedule-next-run').locator('time').getAttribute('datetime'),
    ).resolves.toBe(next);
    await expect(h.page.getByTestId('schedule-cron').textContent()).resolves.toBe(
      '30 2 * * * in Europe/Berlin',
    );
    await expect(h.page.getByTestId('schedule-targets').textContent()).resolves.toBe('tags web');
    await h.page.getByTestId('firings-empty').waitFor();
    await expect(h.page.getByTestId('firing-counts').textContent()).resolves.toBe(
      '0 started · 0 skipped · 0 missed · 0 failed',
    );
    expect(await seriousAxeViolations(h.page)).toEqual([]);
  });

  test('editing replaces the schedule and the next run moves; a bad time zone is refused', async () => {
    const before = await nextRunOf(id);
    await h.page.getByRole('button', { name: 'Edit' }).click();
    await expect(h.page.getByRole('textbox', { name: 'Tags' }).inputValue()).resolves.toBe('web');
    await h.page.getByRole('textbox', { name: 'Time zone' }).fill('Mars/Olympus');
    await h.page.getByRole('button', { name: 'Save the schedule' }).click();
    await h.page.getByRole('alert').filter({ hasText: 'The schedule was not saved' }).waitFor();
    expect(await nextRunOf(id)).toBe(before);

    await h.page.getByRole('textbox', { name: 'Time zone' }).fill('UTC');
    await h.page.getByRole('textbox', { name: 'Cron expression' }).fill('15 4 * * mon');
    await h.page.getByRole('button', { name: 'Save the schedule' }).click();
    await expect.poll(() => h.page.getByTestId('schedule-cron').textContent()).toBe('15 4 * * mon in UTC');
    const after = await nextRunOf(id);
    expect(after).not.toBe(before);
    expect(new Date(after).getUTCDay()).toBe(1);
    expect(after).toMatch(/T04:15:00/);
    await expect(
      h.page.getByTestId('schedule-next-run').locator('time').getAttribute('datetime'),
    ).resolves.toBe(after);
  });

  test('the list shows it with its next run; delete asks, then the list is empty again', async () => {
    await h.page.getByRole('link', { name: '← Schedules' }).click();
    const row = h.page.locator(`[data-testid=schedule-row][data-id="${id}"]`);
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('15 4 * * mon');
    await expect(row.textContent()).resolves.toContain('not fired yet');
    await row.getByRole('link', { name: 'nightly uptime' }).click();
    await h.page.getByRole('button', { name: 'Delete', exact: true }).click();
    await h.page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await h.page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await nextRunOf(id)).toBeTruthy();
    await h.page.getByRole('button', { name: 'Delete', exact: true }).click();
    await h.page.getByRole('dialog').getByRole('button', { name: 'Delete the schedule' }).click();
    await h.page.getByTestId('schedules-empty').waitFor();
    const gone = await h.api.get(`/schedules/${id}`, { auth: h.adminAuth });
    expect(gone.status).toBe(404);
    expect(h.cspErrors).toEqual([]);
  });
  test('the form is usable at 390 px wide (no sideways scrolling)', async () => {
    await h.page.setViewportSize({ width: 390, height: 844 });
    try {
      await h.page.goto(`${h.origin}/schedules/new`);
      await h.page.getByRole('textbox', { name: 'Cron expression' }).waitFor();
      const overflow = Number(
        await h.page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await h.page.getByRole('button', { name: 'Create the schedule' }).scrollIntoViewIfNeeded();
    } finally {
      await h.page.setViewportSize({ width: 1280, height: 860 });
    }
  });
});
