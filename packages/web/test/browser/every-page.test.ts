/**
 * Every page of the console's menu, reached through the menu as the admin: it shows its heading, axe-core finds
 * no serious violation, and nothing went to another origin. A new page joins by its line in `src/nav.ts`.
 */
import { describe, expect, test } from 'vitest';
import { seriousAxeViolations } from '../../../../test-support/browser.js';
import { foreignRequests, useConsoleHarness } from '../../../../test-support/console-harness.js';
import { NAV_PAGES } from '../../src/nav.js';

const h = useConsoleHarness({ suite: 'every-page', agents: [{ id: 'page-1', name: 'page one' }] });

describe('every page of the menu', () => {
  test.each(NAV_PAGES.map((page) => [page.label, page.to]))('%s (%s)', async (label, to) => {
    await h.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label }).click();
    await h.page.waitForURL((url) => url.pathname === to);
    await h.page.getByRole('heading', { level: 1 }).first().waitFor();
    await h.page.waitForLoadState('networkidle');
    expect(await seriousAxeViolations(h.page)).toEqual([]);
  });

  test('asked only its own origin, and the CSP never had to block', () => {
    expect(foreignRequests(h)).toEqual([]);
    expect(h.cspErrors).toEqual([]);
  });
});
