/**
 * svcd serves the web console (packages/web's build) at `/` of the API listener, or `[api] doc_root`'s UI, with
 * deep links falling back to index.html and the API's own 404/405 answers unchanged.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../../../test-support/server.js';
import { CONSOLE_BUILD_DIR } from '../../src/http/static-ui.js';

const html = { accept: 'text/html,application/xhtml+xml' };

function originOf(t: TestServer): string {
  const url = t.server.apiUrl;
  if (!url) throw new Error('no API');
  return url.replace(/\/api\/v1$/, '');
}

describe('the web console', () => {
  let t: TestServer;
  let origin: string;

  beforeAll(async () => {
    // Built by `npm ci` (prepare) and `npm run build`.
    expect(existsSync(join(CONSOLE_BUILD_DIR, 'index.html')), `${CONSOLE_BUILD_DIR} not built`).toBe(true);
    t = await startTestServer({ store: 'database:sqlite' });
    origin = originOf(t);
  });
  afterAll(async () => {
    await t?.stop();
  });

  test('/ is the console page with a strict CSP, no framing and no caching', async () => {
    const res = await fetch(`${origin}/`, { headers: html });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const body = await res.text();
    expect(body).toContain('<div id="root"></div>');
    // No inline script: every script is a file of this origin.
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  test('hashed assets are cached for good', async () => {
    const script = readdirSync(join(CONSOLE_BUILD_DIR, 'assets')).find((f) => f.endsWith('.js'));
    const res = await fetch(`${origin}/assets/${script}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
  });

  test('a deep link gets the page; API paths and missing assets keep their JSON 404', async () => {
    const deep = await fetch(`${origin}/clients/web-1?q=x`, { headers: html });
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<div id="root"></div>');
    expect(deep.headers.get('cache-control')).toBe('no-cache');

    const api = await fetch(`${origin}/api/v1/no-such-thing`, { headers: html });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe(
      'ERR_ROUTE_NOT_FOUND',
    );
    const asset = await fetch(`${origin}/assets/gone-123.js`, { headers: html });
    expect(asset.status).toBe(404);
    // A program asking for JSON is told the route does not exist, not handed a page.
    const plain = await fetch(`${origin}/nothing-here`);
    expect(plain.status).toBe(404);
    const post = await fetch(`${origin}/`, { method: 'POST' });
    expect(post.status).toBe(405);
  });
});

describe('the console switched off, or another UI', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svcd-docroot-'));
    await mkdir(join(dir, 'js'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>other ui</title>');
    await writeFile(join(dir, 'js', 'app.js'), 'console.log(1)');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('enable_web_console = false serves nothing at /', async () => {
    const t = await startTestServer({ store: 'database:sqlite', api: { enable_web_console: false } });
    try {
      expect(t.server.consoleUrl).toBeUndefined();
      const res = await fetch(`${originOf(t)}/`, { headers: html });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe(
        'ERR_ROUTE_NOT_FOUND',
      );
    } finally {
      await t.stop();
    }
  });

  test('doc_root serves its files and its index.html for deep links, without the console CSP', async () => {
    const t = await startTestServer({ store: 'database:sqlite', api: { doc_root: dir } });
    try {
      const origin = originOf(t);
      expect(t.server.consoleUrl).toBe(`${origin}/`);
      const page = await fetch(`${origin}/dashboard/tunnels`, { headers: html });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('other ui');
      expect(page.headers.get('content-security-policy')).toBeNull();
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      const script = await fetch(`${origin}/js/app.js`);
      expect(await script.text()).toBe('console.log(1)');
      expect((await fetch(`${origin}/api/v1/status`)).status).toBe(401);
    } finally {
      await t.stop();
    }
  });
});
