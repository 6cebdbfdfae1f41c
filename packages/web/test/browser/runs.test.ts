/**
 * The Runs area in Chromium against a real svcd and three real svc agents: compose with a live count, one page
 * per run with every result, state filter, full output, CSV export from svcd, run again on the failed ones, a
 * library script run from compose, and a client's job history.
 *
 * db-1 refuses `uname` (its own [remote-commands] deny list), so a command on all three fails there only; the
 * library script exits 3 when its file lies under db-1's data dir, so it fails there with an exit code.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { describe, expect, test } from 'vitest';
import { seriousAxeViolations } from '../../../../test-support/browser.js';
import { foreignRequests, useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({
  suite: 'runs',
  agents: [
    { id: 'web-1', name: 'web one', tags: ['web'] },
    { id: 'web-2', name: 'web two', tags: ['web'] },
    { id: 'db-1', name: 'database', tags: ['db'], extra: ['[remote-commands]', "deny = ['uname']"] },
  ],
});

const rowOf = (clientId: string) => h.page.locator(`[data-testid=run-job][data-client="${clientId}"]`);
const jidInUrl = () => /\/runs\/([0-9a-f-]{36})/.exec(h.page.url())?.[1] ?? '';

/** Waits until the run page lists `n` jobs, none of them running. */
async function allFinished(n: number) {
  await expect.poll(() => h.page.getByTestId('run-job').count(), { timeout: 15_000 }).toBe(n);
  await expect
    .poll(() => h.page.getByTestId('run-job').getByTestId('job-state').allTextContents(), { timeout: 15_000 })
    .not.toContain('running');
}

describe('runs', () => {
  let firstRun = '';

  test('the runs page says how to start one; compose counts the matching clients live', async () => {
    await h.page.goto(`${h.origin}/runs`);
    await h.page.getByTestId('runs-empty').waitFor();
    await h.page.getByRole('link', { name: 'New run' }).click();
    await h.page.getByRole('heading', { level: 1, name: 'New run' }).waitFor();
    await h.page.getByText('Tags', { exact: true }).click();
    await h.page.getByRole('textbox', { name: 'Tags' }).fill('web');
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('2 clients');
    await h.page.getByRole('textbox', { name: 'Tags' }).fill('web, db');
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('3 clients');
    await h.page.getByText('all (AND)').click();
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('0 clients');
    expect(await seriousAxeViolations(h.page)).toEqual([]);
  });

  test('a command on three agents: every result on one page, filter by state, full output', async () => {
    await h.page.goto(`${h.origin}/runs/new?client_ids=web-1,web-2,db-1&command=/usr/bin/uname%20-n`);
    await expect(h.page.getByRole('textbox', { name: 'Command' }).inputValue()).resolves.toBe(
      '/usr/bin/uname -n',
    );
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('3 clients');
    await h.page.getByRole('button', { name: 'Start the run' }).click();
    await h.page.waitForURL(/\/runs\/[0-9a-f-]{36}/);
    firstRun = jidInUrl();
    await allFinished(3);
    await expect(rowOf('web-1').getByTestId('job-state').textContent()).resolves.toBe('successful');
    await expect(rowOf('web-2').getByTestId('run-job-exit').textContent()).resolves.toBe('0');
    await expect(rowOf('db-1').getByTestId('job-state').textContent()).resolves.toBe('failed');

    await h.page.getByText('failed (1)').click();
    await expect.poll(() => h.page.getByTestId('run-job').count()).toBe(1);
    expect(h.page.url()).toContain('state=failed');
    await rowOf('db-1').getByTestId('run-job-preview').click();
    const output = h.page.getByTestId('job-output');
    await output.waitFor();
    await expect(output.textContent()).resolves.toMatch(/refused|not allowed|deny/i);
    await h.page.keyboard.press('Escape');
    await output.waitFor({ state: 'hidden' });
    await h.page.getByText('All (3)').click();
    await expect.poll(() => h.page.getByTestId('run-job').count()).toBe(3);
    await rowOf('web-1').getByTestId('run-job-preview').click();
    await expect(h.page.getByTestId('job-stdout').textContent()).resolves.not.toBe('(empty)');
    await h.page.keyboard.press('Escape');
    await h.page.getByTestId('job-output').waitFor({ state: 'hidden' });
    expect(await seriousAxeViolations(h.page)).toEqual([]);
  });

  test('export CSV downloads the run as svcd exports it', async () => {
    const download = h.page.waitForEvent('download');
    await h.page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe(`run-${firstRun}.csv`);
    const text = await readFile((await file.path()) ?? '', 'utf8');
    const lines = text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'client_id,client_name,status,exit_code,started_at,finished_at,duration_sec,error,stdout,stderr',
    );
    expect(lines.filter((l) => /^web-[12],web (one|two),successful,0,/.test(l))).toHaveLength(2);
    expect(lines.some((l) => l.startsWith('db-1,database,failed,'))).toBe(true);
  });

  test('run again on the failed ones opens the new run with just those clients', async () => {
    await h.page.getByRole('button', { name: 'Run again on the failed ones (1)' }).click();
    await h.page.waitForURL((url) => url.pathname.startsWith('/runs/') && !url.pathname.endsWith(firstRun));
    await allFinished(1);
    await expect(rowOf('db-1').getByTestId('job-state').textContent()).resolves.toBe('failed');
    expect(jidInUrl()).not.toBe(firstRun);
    await h.page.getByRole('link', { name: '← Runs' }).click();
    await expect.poll(() => h.page.getByTestId('run-row').count()).toBe(2);
  });

  test('a library script created through the API runs from compose', async () => {
    const script = [
      '#!/bin/sh',
      'case "$0" in *db-1-data*) echo "no db here" >&2; exit 3;; esac',
      'echo "fine in $0"',
      '',
    ].join('\n');
    const created = await h.api.post(
      '/library/scripts',
      { name: 'where am i', script },
      { auth: h.adminAuth },
    );
    expect(created.status).toBe(201);
    const id = created.json.data.id as string;
    await h.page.goto(`${h.origin}/runs/new?script_id=${id}&tags=web,db`);
    await expect
      .poll(() => h.page.getByRole('textbox', { name: 'Its text' }).inputValue())
      .toContain('no db here');
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('3 clients');
    await h.page.getByRole('button', { name: 'Start the run' }).click();
    await h.page.waitForURL(/\/runs\/[0-9a-f-]{36}/);
    await allFinished(3);
    await expect(rowOf('db-1').getByTestId('run-job-exit').textContent()).resolves.toBe('3');
    await expect(rowOf('web-2').getByTestId('run-job-preview').textContent()).resolves.toContain('fine in');
    await expect(h.page.getByTestId('run-command').textContent()).resolves.toContain('no db here');
  });

  test('a script typed in the editor: the run page shows it running, then its result without a reload', async () => {
    await h.page.goto(`${h.origin}/runs/new?client_ids=web-1`);
    await h.page.getByText('Script', { exact: true }).click();
    // Waits for a file this test creates once it has seen the job running, so "running" is on screen for sure.
    const gate = `${h.dir}/typed-script-gate`;
    await h.page
      .getByRole('textbox', { name: 'Script' })
      .fill(`#!/bin/sh\nwhile [ ! -e ${gate} ]; do sleep 0.1; done\necho typed and done\n`);
    await h.page.getByRole('button', { name: 'Start the run' }).click();
    await h.page.waitForURL(/\/runs\/[0-9a-f-]{36}/);
    await expect.poll(() => rowOf('web-1').getByTestId('job-state').textContent()).toBe('running');
    await writeFile(gate, '');
    await expect
      .poll(() => rowOf('web-1').getByTestId('job-state').textContent(), { timeout: 15_000 })
      .toBe('successful');
    await expect(rowOf('web-1').getByTestId('run-job-preview').textContent()).resolves.toBe('typed and done');
  });

  test("a client's page lists its jobs with the full output of each", async () => {
    await h.page.goto(`${h.origin}/clients/web-2`);
    const history = h.page.getByTestId('job-history');
    await history.waitFor();
    await expect.poll(() => history.locator('tbody tr').count()).toBe(2);
    await history.getByRole('button', { name: /fine in/ }).click();
    await expect(h.page.getByTestId('job-stdout').textContent()).resolves.toMatch(/^fine in .*web-2-data/);
    await h.page.keyboard.press('Escape');
    await h.page.getByTestId('job-output').waitFor({ state: 'hidden' });
    expect(await seriousAxeViolations(h.page)).toEqual([]);
    expect(h.cspErrors).toEqual([]);
    expect(foreignRequests(h)).toEqual([]);
  });

  test('a staged run from compose: batches of one, stopped at the first failure, progress on its page', async () => {
    await h.page.goto(`${h.origin}/runs/new?client_ids=web-1,db-1,web-2&command=/usr/bin/uname%20-n`);
    await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('3 clients');
    await h.page.getByRole('textbox', { name: 'Batch size' }).fill('1');
    await h.page.getByRole('textbox', { name: 'Max failures' }).fill('1');
    await h.page.getByRole('button', { name: 'Start the run' }).click();
    await h.page.waitForURL(/\/runs\/[0-9a-f-]{36}/);
    await allFinished(3);
    await expect(rowOf('web-1').getByTestId('job-state').textContent()).resolves.toBe('successful');
    await expect(rowOf('db-1').getByTestId('job-state').textContent()).resolves.toBe('failed');
    await expect(rowOf('web-2').getByTestId('job-state').textContent()).resolves.toBe('skipped');
    const progress = h.page.getByTestId('run-rollout');
    await expect.poll(() => progress.textContent()).toContain('2 of 3 done');
    await expect(progress.textContent()).resolves.toContain('Stopped: not started: max_failures reached');
    await h.page.getByText('All (3)').waitFor();
    expect(await seriousAxeViolations(h.page)).toEqual([]);
  });

  /** A script run on the three agents started through the API, each job waiting for `gate` before it ends. */
  async function runWaitingFor(gate: string): Promise<string> {
    const script = `#!/bin/sh\necho first\nwhile [ ! -e ${gate} ]; do sleep 0.05; done\necho second\n`;
    const started = await h.api.post(
      '/scripts',
      {
        script: Buffer.from(script).toString('base64'),
        client_ids: ['web-1', 'web-2', 'db-1'],
        execute_concurrently: true,
      },
      { auth: h.adminAuth },
    );
    expect(started.status, started.text).toBe(200);
    return started.json.data.jid as string;
  }

  test('a run already running when its page opens is followed live over the socket, without polling', async () => {
    const gate = `${h.dir}/follow-gate`;
    const jid = await runWaitingFor(gate);
    const socketClosed = new Promise<void>((resolve) =>
      h.page.on('websocket', (ws) => {
        if (ws.url().includes(`/ws/commands/${jid}`)) ws.on('close', () => resolve());
      }),
    );
    await h.page.goto(`${h.origin}/runs/${jid}`);
    await h.page.getByTestId('run-live').waitFor();
    await expect.poll(() => h.page.getByTestId('run-job').count()).toBe(3);
    const readsBefore = h.requested.filter((url) => url.includes(`/api/v1/commands/${jid}`)).length;
    await writeFile(gate, '');
    await socketClosed;
    // Every result came over the socket: the run was not read again while it was followed.
    expect(h.requested.filter((url) => url.includes(`/api/v1/commands/${jid}`)).length).toBe(readsBefore);
    await allFinished(3);
    for (const id of ['web-1', 'web-2', 'db-1']) {
      await expect(rowOf(id).getByTestId('job-state').textContent()).resolves.toBe('successful');
      await expect(rowOf(id).getByTestId('run-job-preview').textContent()).resolves.toBe('first');
    }
    await h.page.getByTestId('run-live').waitFor({ state: 'detached' });
    await rowOf('web-1').getByTestId('run-job-preview').click();
    await expect(h.page.getByTestId('job-stdout').textContent()).resolves.toBe('first\nsecond\n');
    await h.page.keyboard.press('Escape');
    await h.page.getByTestId('job-output').waitFor({ state: 'hidden' });
  });

  test('a run whose every listed job ended is not over while clients are still to be reached', async () => {
    // A staged run, one client per batch and a long pause between: after the first batch the only row has
    // ended, yet web-2 has no job yet and the run runs on.
    const started = await h.api.post(
      '/commands',
      {
        command: '/usr/bin/uname -n',
        client_ids: ['web-1', 'web-2'],
        execute_concurrently: true,
        batch_size: 1,
        batch_delay: 600,
      },
      { auth: h.adminAuth },
    );
    expect(started.status, started.text).toBe(200);
    const jid = started.json.data.jid as string;
    const progress = h.page.getByTestId('run-progress');
    try {
      await h.page.goto(`${h.origin}/runs/${jid}`);
      await expect
        .poll(() => rowOf('web-1').getByTestId('job-state').textContent(), { timeout: 15_000 })
        .toBe('successful');
      expect(await h.page.getByTestId('run-job').count()).toBe(1);
      await expect(progress.getAttribute('data-done')).resolves.toBe('false');
      await expect(progress.textContent()).resolves.toBe(
        'Still running: the 1 job listed ended; the clients not reached yet get theirs as the run goes on.',
      );
    } finally {
      const cancelled = await h.api.delete(`/commands/${jid}`, { auth: h.adminAuth });
      expect(cancelled.status, cancelled.text).toBe(202);
    }
    // Cancelled: web-2 gets its (cancelled) job, the run is over and the page says so.
    await expect.poll(() => progress.getAttribute('data-done'), { timeout: 15_000 }).toBe('true');
    await expect(progress.textContent()).resolves.toBe('The run is over: 2 jobs, every one ended.');
  });

  test('when the follow socket fails the run page polls instead and still shows every result', async () => {
    const gate = `${h.dir}/polling-gate`;
    const jid = await runWaitingFor(gate);
    await h.page.routeWebSocket(/\/ws\/commands\/[0-9a-f-]{36}/, (ws) =>
      ws.close({ code: 1011, reason: 'test' }),
    );
    try {
      await h.page.goto(`${h.origin}/runs/${jid}`);
      await expect.poll(() => h.page.getByTestId('run-job').count()).toBe(3);
      const readsBefore = h.requested.filter((url) => url.includes(`/api/v1/commands/${jid}`)).length;
      // Polling: the run is read again while it runs.
      await expect
        .poll(() => h.requested.filter((url) => url.includes(`/api/v1/commands/${jid}`)).length)
        .toBeGreaterThan(readsBefore);
      expect(await h.page.getByTestId('run-live').count()).toBe(0);
      await writeFile(gate, '');
      await allFinished(3);
      await expect(rowOf('web-2').getByTestId('job-state').textContent()).resolves.toBe('successful');
    } finally {
      await h.page.unrouteAll();
    }
  });

  test('a run and its compose page fit a 390 px wide phone', async () => {
    await h.page.setViewportSize({ width: 390, height: 844 });
    const overflow = () =>
      h.page.evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
          .document.documentElement;
        return root.scrollWidth;
      });
    try {
      await h.page.goto(`${h.origin}/runs/new?tags=web`);
      await expect.poll(() => h.page.getByTestId('target-count').textContent()).toBe('2 clients');
      expect(await overflow()).toBeLessThanOrEqual(390);
      await h.page.goto(`${h.origin}/runs`);
      await h.page.getByTestId('run-row').first().getByRole('link').click();
      await expect.poll(() => h.page.getByTestId('run-job').count()).toBeGreaterThan(0);
      expect(await overflow()).toBeLessThanOrEqual(390);
    } finally {
      await h.page.setViewportSize({ width: 1280, height: 860 });
    }
  });
});
