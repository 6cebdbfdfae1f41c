/**
 * What a browser test of one area of the web console needs: a real svcd (no second factor, so a login is one
 * form), real svc agents, Debian's chromium with one page, the admin logged in through the login form, and a
 * screenshot kept when a test fails. Every request the page makes and every CSP complaint are recorded, so a
 * file can prove the console asked nothing of another origin.
 *
 *   const h = useConsoleHarness({ suite: 'runs', agents: [{ id: 'a-1', name: 'one', tags: ['web'] }] });
 *   test('…', async () => { await h.page.goto(`${h.origin}/runs`); … });
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { ApiClient } from './api-client.js';
import { keepScreenshot, launchChromium } from './browser.js';
import { startE2eAgent } from './e2e-agent.js';
import { E2E_ADMIN, startE2eSvcdOnFreePorts } from './e2e-setup.js';
import type { RunningProcess } from './process.js';

export interface ConsoleAgent {
  id: string;
  name: string;
  tags?: string[];
  /** More [client] lines, e.g. `labels = { env = "prod" }`. */
  extra?: string[];
}

export interface ConsoleHarnessOptions {
  /** Names the screenshot folder under test-results/. */
  suite: string;
  agents?: ConsoleAgent[];
  /** More [server] and [api] lines of svcd.conf. */
  server?: string[];
  api?: string[];
  viewport?: { width: number; height: number };
  /**
   * Where svcd reads the agents' credential: `static` (default, `[server] auth`; /clients-auth answers 400) or
   * `file` (`[server] auth_file`, writable through /clients-auth).
   */
  agentAuth?: 'static' | 'file';
  /** API users in database tables with group_details (group permissions on) instead of users.json. */
  userTables?: boolean;
  /** False: nobody is logged in before the first test (e.g. when a second factor needs the test's own steps). */
  login?: boolean;
}

export interface ConsoleHarness {
  /** `http://127.0.0.1:<api port>`: the console and, under /api/v1, the API. */
  readonly origin: string;
  readonly page: Page;
  readonly browser: Browser;
  readonly svcd: RunningProcess;
  /** The API, for setting things up or checking them; `adminAuth` reads and writes as the admin. */
  readonly api: ApiClient;
  readonly adminAuth: { basic: [string, string] };
  readonly dir: string;
  /** Every URL the page asked for, and every CSP complaint, since the start of the file. */
  readonly requested: string[];
  readonly cspErrors: string[];
  /** Starts one more agent and resolves once it is connected. */
  startAgent(agent: ConsoleAgent): Promise<RunningProcess>;
  /** Logs in through the form (the page ends on the console, out of /login). */
  login(username?: string, password?: string): Promise<void>;
}

const AGENT_AUTH = 'agent:agent-password-1';

/**
 * Registers beforeAll/afterAll/beforeEach hooks for the calling test file and returns the harness, whose fields
 * are filled once beforeAll has run. The admin is logged in before the first test.
 */
export function useConsoleHarness(options: ConsoleHarnessOptions): ConsoleHarness {
  const state = {} as {
    -readonly [K in keyof ConsoleHarness]: ConsoleHarness[K];
  };
  const processes: RunningProcess[] = [];
  let clientPort = 0;
  let fingerprint = '';
  state.requested = [];
  state.cspErrors = [];
  state.adminAuth = { basic: [E2E_ADMIN.username, E2E_ADMIN.password] };

  state.startAgent = async (agent) => {
    const proc = await startE2eAgent({
      dir: state.dir,
      server: `http://127.0.0.1:${clientPort}`,
      fingerprint,
      id: agent.id,
      auth: AGENT_AUTH,
      lines: [`name = "${agent.name}"`, `tags = ${JSON.stringify(agent.tags ?? [])}`, ...(agent.extra ?? [])],
    });
    processes.push(proc);
    return proc;
  };

  state.login = async (username = E2E_ADMIN.username, password = E2E_ADMIN.password) => {
    const { page } = state;
    await page.goto(`${state.origin}/login`);
    await page.getByLabel('Username').fill(username);
    await page.getByRole('textbox', { name: 'Password' }).fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((url) => url.pathname !== '/login');
  };

  beforeAll(async () => {
    state.dir = await mkdtemp(join(tmpdir(), `svc-console-${options.suite}-`));
    const [agentId, agentPassword] = AGENT_AUTH.split(':') as [string, string];
    if (options.agentAuth === 'file')
      await writeFile(join(state.dir, 'clients-auth.json'), JSON.stringify({ [agentId]: agentPassword }));
    const agentAuth =
      options.agentAuth === 'file' ? 'auth_file = "clients-auth.json"' : `auth = "${AGENT_AUTH}"`;
    const started = await startE2eSvcdOnFreePorts(state.dir, {
      keySeed: `console-${options.suite}-seed`,
      server: [agentAuth, ...(options.server ?? [])],
      api: ['user_login_wait = 0', ...(options.api ?? [])],
      ...(options.userTables ? { userTables: true } : {}),
    });
    clientPort = started.clientPort;
    state.svcd = started.svcd;
    state.api = started.api;
    fingerprint = started.fingerprint;
    state.origin = `http://127.0.0.1:${started.apiPort}`;
    const [, browser] = await Promise.all([
      Promise.all((options.agents ?? []).map((agent) => state.startAgent(agent))),
      launchChromium(),
    ]);
    state.browser = browser;
    state.page = await browser.newPage({ viewport: options.viewport ?? { width: 1280, height: 860 } });
    // Fail a step well inside the test's own timeout, so the screenshot shows where it stuck.
    state.page.setDefaultTimeout(10_000);
    state.page.on('request', (request) => state.requested.push(request.url()));
    state.page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) state.cspErrors.push(message.text());
    });
    if (options.login !== false) await state.login();
  }, 90_000);

  afterAll(async () => {
    await state.browser?.close();
    for (const proc of processes) await proc.stop();
    await state.svcd?.stop();
    if (state.dir) await rm(state.dir, { recursive: true, force: true });
  });

  beforeEach(({ task, onTestFailed }) => {
    onTestFailed(async () => {
      const path = await keepScreenshot(state.page, options.suite, task.name);
      console.error(`screenshot of the failed test: ${path}`);
    });
  });

  return state;
}

/** The URLs in `requested` that went to another origin than the console's (data: URLs aside). */
export function foreignRequests(harness: ConsoleHarness): string[] {
  return harness.requested.filter(
    (url) => !url.startsWith('data:') && new URL(url).origin !== harness.origin,
  );
}
