/**
 * Operating a fleet from the console, in Chromium against a real svcd and real svc agents: saved views and
 * columns, selection and bulk actions (a run's link, removing disconnected clients), tunnels on a client and
 * across clients, and 200 simulated agents speaking the real link, listed and filtered.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { LoadSimulator } from '../../../../bench/support/load-simulator.js';
import { seriousAxeViolations } from '../../../../test-support/browser.js';
import { useConsoleHarness } from '../../../../test-support/console-harness.js';
import { parseLog } from '../../../../test-support/process.js';

const h = useConsoleHarness({
  suite: 'fleet',
  agents: [
    { id: 'fleet-1', name: 'web one', tags: ['web', 'eu'] },
    { id: 'fleet-2', name: 'web two', tags: ['web', 'us'] },
  ],
});

let simulator: LoadSimulator | undefined;
let backend: Server | undefined;
afterAll(async () => {
  await simulator?.stop();
  backend?.close();
});

interface View {
  id: string;
  name: string;
  search: string;
  columns: string[];
  sort: string;
}

const views = async (): Promise<View[]> => {
  const res = await h.api.get('/me/views', { auth: h.adminAuth });
  expect(res.status).toBe(200);
  return res.json.data as View[];
};

const headers = () => h.page.locator('.clients-table thead th').allTextContents();
const countIs = (text: string) => h.page.getByTestId('clients-count').filter({ hasText: text }).waitFor();

/** Waits until svcd lists the client in that state. */
async function clientState(id: string, state: 'connected' | 'disconnected'): Promise<void> {
  await expect
    .poll(
      async () => {
        const res = await h.api.get(`/clients/${id}`, { auth: h.adminAuth });
        return (res.json as { data?: { connection_state?: string } } | undefined)?.data?.connection_state;
      },
      {
        timeout: 15_000,
      },
    )
    .toBe(state);
}

describe('fleet operations in the console', () => {
  test('columns are chosen, saved with the filter as a view, opened again by its link, renamed and deleted', async () => {
    const { page } = h;
    await page.goto(`${h.origin}/clients?tags=web`);
    await countIs('2 clients');
    await page.getByRole('button', { name: /^Columns/ }).click();
    await page.getByRole('checkbox', { name: 'Arch' }).check();
    await page.getByRole('checkbox', { name: 'Hostname' }).uncheck();
    await page.keyboard.press('Escape');
    await page.waitForURL((url) => url.searchParams.has('cols'));
    expect(await headers()).toContain('Arch');
    expect(await headers()).not.toContain('Hostname');

    await page.getByRole('button', { name: 'Save as view…' }).click();
    await page.getByLabel('Name of the new view').fill('Web fleet');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved the view “Web fleet”.' }).waitFor();
    await page.waitForURL((url) => url.searchParams.has('view'));
    const [saved] = await views();
    expect(saved).toMatchObject({ name: 'Web fleet', sort: '' });
    expect(saved?.columns).toContain('os_arch');
    expect(saved?.columns).not.toContain('hostname');
    expect(new URLSearchParams(saved?.search).get('tags')).toBe('web');

    // The link carries filter, columns and view: a fresh page opened by it shows the same list.
    const link = `${h.origin}/clients?${saved?.search}&view=${saved?.id}`;
    await page.goto(`${h.origin}/`);
    await page.goto(link);
    await countIs('2 clients');
    expect(await headers()).toContain('Arch');
    await expect
      .poll(() => page.getByRole('combobox', { name: 'Saved view' }).inputValue())
      .toBe('Web fleet');

    // Picking the view from the list on a plain page applies it.
    await page.goto(`${h.origin}/clients`);
    await page
      .getByTestId('clients-count')
      .filter({ hasText: /^\d+ clients?$/ })
      .waitFor();
    await page.getByRole('combobox', { name: 'Saved view' }).click();
    await page.getByRole('option', { name: 'Web fleet' }).click();
    await countIs('2 clients');
    expect(new URL(page.url()).searchParams.get('tags')).toBe('web');

    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('New name of the view').fill('Web servers');
    await page.getByRole('button', { name: 'Rename' }).last().click();
    await page.getByRole('status').filter({ hasText: 'Renamed to “Web servers”.' }).waitFor();
    expect((await views()).map((v) => v.name)).toEqual(['Web servers']);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete view' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted the view “Web servers”.' }).waitFor();
    expect(await views()).toEqual([]);
  });

  test('selected rows start a run through /runs/new with their ids', async () => {
    const { page } = h;
    await page.goto(`${h.origin}/clients?tags=web`);
    await countIs('2 clients');
    await page.getByRole('checkbox', { name: 'Select web two' }).check();
    await page.getByRole('checkbox', { name: 'Select web one' }).check();
    await page.getByTestId('bulk-actions').filter({ hasText: '2 clients selected' }).waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Run a command or script…' }).click();
    await page.waitForURL((url) => url.pathname === '/runs/new');
    const params = new URL(page.url()).searchParams;
    expect(params.get('client_ids')?.split(',').sort()).toEqual(['fleet-1', 'fleet-2']);
  });

  test('disconnected clients are removed in bulk (connected ones skipped) and from their own page', async () => {
    const { page } = h;
    const gone = await h.startAgent({ id: 'fleet-3', name: 'gone one', tags: ['old'] });
    const gone2 = await h.startAgent({ id: 'fleet-4', name: 'gone two', tags: ['old'] });
    await Promise.all([gone.stop(), gone2.stop()]);
    await clientState('fleet-3', 'disconnected');
    await clientState('fleet-4', 'disconnected');

    await page.goto(`${h.origin}/clients?sort=id`);
    await page.getByRole('checkbox', { name: 'Select gone one' }).check();
    await page.getByRole('checkbox', { name: 'Select web one' }).check();
    await page.getByRole('button', { name: 'Remove disconnected clients' }).click();
    await page.getByRole('button', { name: 'Yes, remove them' }).click();
    const summary = page.getByTestId('removal-summary');
    await summary.filter({ hasText: 'Removal finished' }).waitFor();
    expect(await summary.textContent()).toContain('Removed 1 of 1 disconnected. Skipped 1 connected client');
    expect((await h.api.get('/clients/fleet-3', { auth: h.adminAuth })).status).toBe(404);
    await clientState('fleet-1', 'connected');

    await page.goto(`${h.origin}/clients/fleet-4`);
    await page.getByRole('button', { name: 'Forget this client' }).click();
    await page.getByRole('button', { name: 'Yes, forget fleet-4' }).click();
    await page.waitForURL((url) => url.pathname === '/clients');
    expect((await h.api.get('/clients/fleet-4', { auth: h.adminAuth })).status).toBe(404);
  });

  test('a tunnel is opened on a client, carries a request, shows on /tunnels and the dashboard, and closes', async () => {
    const { page } = h;
    backend = createServer((_req, res) => res.end('hello from behind the tunnel'));
    await new Promise<void>((resolve) => backend!.listen(0, '127.0.0.1', resolve));
    const port = (backend.address() as AddressInfo).port;

    await page.goto(`${h.origin}/clients/fleet-1`);
    const form = page.getByRole('form', { name: 'New tunnel' });
    await form.getByLabel('Remote (on the client)').fill(`127.0.0.1:${port}`);
    await form.getByRole('combobox', { name: 'Scheme' }).fill('http');
    await form.getByLabel('ACL').fill('127.0.0.1');
    await form.getByLabel('Idle timeout (minutes)').fill('7');
    await form.getByRole('button', { name: 'Open tunnel' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Opened tunnel 1: http:\/\// })
      .waitFor();
    const address = (await page.getByTestId('tunnel-address').first().textContent()) ?? '';
    expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const through = await fetch(address);
    expect(await through.text()).toBe('hello from behind the tunnel');
    await page.getByTestId('tunnel-row').filter({ hasText: 'closes' }).waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);

    await page.goto(`${h.origin}/`);
    await page.getByTestId('tunnels-open').filter({ hasText: '1' }).waitFor();
    expect(await page.getByTestId('server-uptime').textContent()).toMatch(/^\d+ (ms|s|min|h|d)/);
    await page.getByTestId('tunnels-open').click();
    await page.waitForURL((url) => url.pathname === '/tunnels');
    const row = page.getByTestId('tunnel-row').filter({ hasText: 'web one' });
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    expect(text).toContain(`127.0.0.1:${port}`);
    expect(text).toContain('admin');
    expect(text).toContain('127.0.0.1');
    await row.getByRole('button', { name: 'Close tunnel 1 of web one' }).click();
    await page.getByRole('status').filter({ hasText: 'Closed tunnel 1 of web one.' }).waitFor();
    await page.getByTestId('tunnels-empty').waitFor();
    const left = await h.api.get('/tunnels', { auth: h.adminAuth });
    expect(left.json.meta.count).toBe(0);
    await expect(fetch(address)).rejects.toThrow();
  });

  test('200 simulated agents are listed and filtered; "all matching" passes a tag filter as itself, others as ids', async () => {
    const { page } = h;
    const started = h.svcd.stdoutLines.map(parseLog).find((l) => l?.msg === 'client listener started');
    const status = await h.api.get('/status', { auth: h.adminAuth });
    simulator = new LoadSimulator({
      url: `ws://127.0.0.1:${String(started?.port)}`,
      authId: 'agent',
      password: 'agent-password-1',
      fingerprint: status.json.data.fingerprint as string,
      idPrefix: 'sim-',
      count: 200,
      startConcurrency: 20,
    });
    void simulator.start();
    await expect.poll(() => simulator!.snapshot().connected, { timeout: 30_000 }).toBe(200);

    await page.goto(`${h.origin}/clients?q=sim-`);
    await countIs('200 clients');
    await page.getByLabel('Tags').fill('even');
    await countIs('100 clients');
    await page.waitForURL((url) => url.searchParams.get('tags') === 'even');

    // Tags alone: the run API targets the same clients by tags, so the filter goes as it is.
    await page.goto(`${h.origin}/clients?tags=simulated`);
    await countIs('200 clients');
    await page.getByRole('checkbox', { name: 'Select every client on this page' }).check();
    await page.getByRole('button', { name: 'Select all 200 clients matching the filter' }).click();
    await page.getByTestId('bulk-actions').filter({ hasText: '200 clients selected' }).waitFor();
    await page.getByRole('button', { name: 'Run a command or script…' }).click();
    await page.waitForURL((url) => url.pathname === '/runs/new');
    expect([...new URL(page.url()).searchParams]).toEqual([['tags', 'simulated']]);

    // Tags and connection state: no run target says that, so the matching ids go.
    await page.goto(`${h.origin}/clients?tags=odd&state=connected&limit=50`);
    await countIs('100 clients');
    await page.getByRole('checkbox', { name: 'Select every client on this page' }).check();
    await page.getByRole('button', { name: 'Select all 100 clients matching the filter' }).click();
    await page.getByRole('button', { name: 'Run a command or script…' }).click();
    await page.waitForURL((url) => url.pathname === '/runs/new');
    const ids = new URL(page.url()).searchParams.get('client_ids')?.split(',') ?? [];
    expect(ids).toHaveLength(100);
    expect(ids.every((id) => /^sim-\d\d[13579]$/.test(id))).toBe(true);
  });

  test('the dashboard lists recent runs with the failed ones first, each linking to its run page', async () => {
    const { page } = h;
    const start = async (command: string, clientId: string) => {
      const res = await h.api.post('/commands', { command, client_ids: [clientId] }, { auth: h.adminAuth });
      expect(res.status, res.text).toBe(200);
      const jid = res.json.data.jid as string;
      await expect
        .poll(
          async () => {
            const run = await h.api.get(`/commands/${jid}`, { auth: h.adminAuth });
            return (run.json as { data?: { status?: string } }).data?.status;
          },
          { timeout: 15_000 },
        )
        .not.toBe('running');
      return jid;
    };
    // The failed run is the older one: newest-first alone would list it second.
    const failed = await start('/usr/bin/false', 'fleet-2');
    const succeeded = await start('/usr/bin/true', 'fleet-1');
    await page.goto(`${h.origin}/`);
    const runs = page.getByTestId('recent-runs');
    await runs.getByRole('link').nth(1).waitFor();
    const links = await Promise.all(
      (await runs.getByRole('link').all()).map((link) => link.getAttribute('href')),
    );
    expect(links).toEqual([`/runs/${failed}`, `/runs/${succeeded}`]);
    expect(await runs.locator('.mantine-Badge-root').allTextContents()).toEqual(['failed', 'successful']);
    await runs.getByRole('link').first().click();
    await page.waitForURL((url) => url.pathname === `/runs/${failed}`);
  });

  test('at 390 px wide the clients page with its bulk bar and the tunnels page fit the screen', async () => {
    const { page } = h;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const pageWidth = () => page.evaluate('document.documentElement.scrollWidth');
      await page.goto(`${h.origin}/clients?tags=web`);
      await countIs('2 clients');
      await page.getByRole('checkbox', { name: 'Select web one' }).check();
      await page.getByTestId('bulk-actions').waitFor();
      expect(await pageWidth()).toBeLessThanOrEqual(390);
      await page.goto(`${h.origin}/tunnels`);
      await page.getByRole('heading', { level: 1, name: 'Tunnels' }).waitFor();
      expect(await pageWidth()).toBeLessThanOrEqual(390);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  test('asked only its own origin, and the CSP never had to block', () => {
    expect(h.requested.filter((url) => !url.startsWith('data:') && new URL(url).origin !== h.origin)).toEqual(
      [],
    );
    expect(h.cspErrors).toEqual([]);
  });
});
