/**
 * The web console in Chromium against a real svcd (TOTP login on) and three real svc agents: one svcd and one
 * browser for the file, one page logged in once and used by every test in order.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { keepScreenshot, launchChromium, seriousAxeViolations } from '../../../../test-support/browser.js';
import {
  E2E_ADMIN,
  startSvcdProcess,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../../../../test-support/e2e-setup.js';
import { SVC_BIN, freePort, startProcess, type RunningProcess } from '../../../../test-support/process.js';
import { awayFromStepEdge, currentStep, totpCode } from '../../../../test-support/totp.js';
import { NAV_PAGES } from '../../src/nav.js';

const AGENTS = [
  { id: 'web-1', name: 'web one', tags: ['web', 'eu'] },
  { id: 'web-2', name: 'web two', tags: ['web', 'us'] },
  { id: 'db-1', name: 'database', tags: ['db'] },
];

let dir: string;
let svcd: RunningProcess | undefined;
const agents: RunningProcess[] = [];
let browser: Browser | undefined;
let page: Page;
let origin: string;
/** Every URL the page asked for, and every CSP complaint, over the whole file. */
const requested: string[] = [];
/** The admin's authenticator-app secret, from the enrolment at the first login. */
let totpSecret = '';
const cspErrors: string[] = [];

async function startAgent(agent: (typeof AGENTS)[number], clientPort: number, fingerprint: string) {
  const conf = join(dir, `${agent.id}.conf`);
  await writeFile(
    conf,
    [
      '[client]',
      `server = "http://127.0.0.1:${clientPort}"`,
      'auth = "agent:agent-password-1"',
      `id = "${agent.id}"`,
      `name = "${agent.name}"`,
      `tags = ${JSON.stringify(agent.tags)}`,
      `fingerprint = "${fingerprint}"`,
      `data_dir = "${agent.id}-data"`,
    ].join('\n'),
  );
  const proc = startProcess(SVC_BIN, ['-c', conf], { env: { SVC_AUTH: undefined } });
  agents.push(proc);
  await proc.waitForLog('connected to svcd');
}

/** Waits until the clients table shows exactly `n` rows. */
const rowCount = (n: number) =>
  page.waitForFunction(
    (count) =>
      (globalThis as unknown as PageGlobals).document.querySelectorAll('[data-testid=client-row]').length ===
      count,
    n,
  );

/** What the predicates use of the page's globals (the tests compile without the DOM library). */
interface PageGlobals {
  document: { querySelectorAll(selector: string): { length: number } };
}

// The first cell is the row's selection checkbox; the name comes next.
const rowNames = () => page.getByTestId('client-row').locator('td:nth-child(2)').allTextContents();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-console-'));
  const [apiPort, clientPort] = [await freePort(), await freePort()];
  await writeAdminUserFile(dir);
  const configPath = await writeSvcdConfig(dir, {
    apiPort,
    clientPort,
    keySeed: 'console-e2e-seed',
    server: ['auth = "agent:agent-password-1"'],
    api: ['totp_enabled = true', 'user_login_wait = 0', 'max_failed_login = 2', 'ban_time = "2s"'],
  });
  svcd = await startSvcdProcess(configPath);
  // With a second factor, Basic credentials no longer read /status; the log names the fingerprint.
  const fingerprint = String((await svcd.waitForLog('client listener started')).fingerprint);
  origin = `http://127.0.0.1:${apiPort}`;
  const [, launched] = await Promise.all([
    Promise.all(AGENTS.map((agent) => startAgent(agent, clientPort, fingerprint))),
    launchChromium(),
  ]);
  browser = launched;
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  // Fail a step well inside the test's own timeout, so the screenshot shows where it stuck.
  page.setDefaultTimeout(10_000);
  page.on('request', (request) => requested.push(request.url()));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  for (const agent of agents) await agent.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(({ task, onTestFailed }) => {
  onTestFailed(async () => {
    const path = await keepScreenshot(page, 'console', task.name);
    console.error(`screenshot of the failed test: ${path}`);
  });
});

describe('the web console', () => {
  test('a deep link without a session asks for a login; a wrong password and a ban are explained', async () => {
    await page.goto(`${origin}/clients?tags=web`);
    await page.getByLabel('Username').waitFor();
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await seriousAxeViolations(page)).toEqual([]);

    await page.getByLabel('Username').fill(E2E_ADMIN.username);
    await page.getByRole('textbox', { name: 'Password' }).fill('wrong-password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('Wrong username or password').waitFor();

    // The second failure reaches max_failed_login; the next attempt is refused with the seconds left.
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByTestId('login-error').getByText('Wrong username or password').waitFor();
    await page.getByRole('button', { name: 'Log in' }).click();
    const ban = page.getByTestId('login-error');
    await ban.getByText('Too many failed logins').waitFor();
    expect(await ban.textContent()).toMatch(/Try again in [12] s/);
    // The countdown runs out with the ban (its seconds are rounded up).
    await ban.getByText('Try again in 0 s').waitFor({ timeout: 5000 });
  });

  test('login with the authenticator app: enrolment with the QR code, then back to the deep link', async () => {
    await page.getByRole('textbox', { name: 'Password' }).fill(E2E_ADMIN.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('img', { name: /QR code/ }).waitFor();
    totpSecret = (await page.getByTestId('totp-secret').textContent()) ?? '';
    expect(totpSecret).toMatch(/^[A-Z2-7]{16,}$/);
    await awayFromStepEdge();
    await page.getByLabel('Authenticator code').fill(totpCode(totpSecret, currentStep()));
    await page.getByRole('button', { name: 'Verify' }).click();

    await page.getByRole('heading', { name: 'Clients' }).waitFor();
    const url = new URL(page.url());
    expect(url.pathname).toBe('/clients');
    expect(url.searchParams.get('tags')).toBe('web');
    await rowCount(2);
    expect((await rowNames()).sort()).toEqual(['web one', 'web two']);
    // The token stays out of localStorage.
    expect(await page.evaluate('JSON.stringify(localStorage)')).toBe('{}');
  });

  test('the dashboard shows the clients, tunnels, vault and server', async () => {
    await page.getByRole('link', { name: 'Dashboard' }).click();
    await page.getByTestId('clients-connected').getByText('3').waitFor();
    expect(await page.getByTestId('clients-disconnected').textContent()).toBe('0');
    expect(await page.getByTestId('tunnels-open').textContent()).toBe('0');
    expect(await page.getByTestId('vault-state').textContent()).toBe('Not set up');
    expect(await page.getByTestId('server-fingerprint').textContent()).toMatch(
      /^([0-9a-f]{2}:){15}[0-9a-f]{2}$/,
    );
    expect(await page.getByTestId('server-version').textContent()).toMatch(/^\d+\.\d+\.\d+/);
    expect(await seriousAxeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: /Connected clients/ }).click();
    await page.getByRole('heading', { name: 'Clients' }).waitFor();
    expect(new URL(page.url()).searchParams.get('state')).toBe('connected');
  });

  test('the clients list filters and sorts through the URL', async () => {
    await page.goto(`${origin}/clients?state=connected&sort=-name`);
    await rowCount(3);
    expect(await rowNames()).toEqual(['web two', 'web one', 'database']);
    expect(await page.getByTestId('clients-count').textContent()).toBe('3 clients');

    await page.getByLabel('Search').fill('datab');
    await page.waitForURL((url) => url.searchParams.get('q') === 'datab');
    await rowCount(1);
    expect(await rowNames()).toEqual(['database']);

    await page.goto(`${origin}/clients?q=nothing-like-this`);
    await page.getByTestId('clients-empty').getByText('No client matches these filters.').waitFor();
    await page.getByRole('button', { name: 'Clear the filters' }).click();
    await rowCount(3);
    expect(await seriousAxeViolations(page)).toEqual([]);
  });

  test('a client page runs a command and shows its output live', async () => {
    await page.getByRole('link', { name: 'web one' }).click();
    await page.getByRole('heading', { name: 'web one' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/clients/web-1');
    await page.getByLabel('Command').fill('/usr/bin/echo hello from the console');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByTestId('command-status').waitFor({ timeout: 20_000 });
    expect(await page.getByTestId('command-status').textContent()).toBe('successful');
    expect(await page.getByTestId('command-exit-code').textContent()).toBe('exit code 0');
    expect(await page.getByTestId('command-output').textContent()).toBe('hello from the console\n');
    expect(await seriousAxeViolations(page)).toEqual([]);
  });

  test('a phone-sized screen keeps every page of the menu usable', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${origin}/clients`);
      await rowCount(3);
      await page.getByRole('button', { name: 'Menu' }).click();
      await page.getByRole('link', { name: 'Dashboard' }).click();
      await page.getByTestId('clients-connected').getByText('3').waitFor();
      // Nothing wider than the screen but the tables' own scroll areas.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      // Every page of the menu, reached through the menu as a phone user does (the admin sees them all).
      const wide: string[] = [];
      for (const { label, to } of NAV_PAGES) {
        await page.getByRole('button', { name: 'Menu' }).click();
        await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label }).click();
        await page.waitForURL((url) => url.pathname === to);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await page.waitForLoadState('networkidle');
        const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
        if (width > 390) wide.push(`${label} (${to}): ${width} px`);
      }
      expect(wide).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  }, 120_000);

  test('an expired session says so and returns to the same page after the next login', async () => {
    await page.goto(`${origin}/clients?tags=db`);
    await rowCount(1);
    const stored = JSON.parse(String(await page.evaluate('sessionStorage.getItem("svc.session")'))) as {
      token: string;
    };
    // The server forgets the token, as it does when the token's lifetime ends.
    const revoked = await fetch(`${origin}/api/v1/logout`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${stored.token}` },
    });
    expect(revoked.status).toBe(204);
    await page.getByLabel('Search').fill('data');
    await page.getByTestId('session-expired').waitFor();
    expect(new URL(page.url()).pathname).toBe('/login');

    await page.getByLabel('Username').fill(E2E_ADMIN.username);
    await page.getByRole('textbox', { name: 'Password' }).fill(E2E_ADMIN.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await awayFromStepEdge();
    // The first login used this step's code; svcd accepts the next step's, and refuses a replay.
    await page.getByLabel('Authenticator code').fill(totpCode(totpSecret, currentStep() + 1));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Clients' }).waitFor();
    const url = new URL(page.url());
    expect([url.pathname, url.searchParams.get('tags'), url.searchParams.get('q')]).toEqual([
      '/clients',
      'db',
      'data',
    ]);
    await rowCount(1);
  });

  test('logout ends the session and the console returns to the login page', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Username').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.goto(`${origin}/`);
    await page.getByLabel('Username').waitFor();
  });

  test('the console asked only its own origin for anything, and the CSP never had to block', () => {
    expect(requested.length).toBeGreaterThan(5);
    const foreign = requested.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin);
    expect(foreign).toEqual([]);
    expect(cspErrors).toEqual([]);
  });
});
