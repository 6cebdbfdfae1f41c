/**
 * The login page's JavaScript budget: what the built index.html loads before anything else (its entry script and
 * the modules it preloads), gzipped. Other pages load their own chunks when first opened.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { expect, test } from 'vitest';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
const BUDGET_BYTES = 250 * 1024;

test('the login page loads at most 250 KB of gzipped JavaScript, from this origin only', () => {
  expect(existsSync(join(DIST, 'index.html')), 'packages/web/dist is built by npm ci / npm run build').toBe(
    true,
  );
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const scripts = [
    ...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+)"/g),
  ].map((m) => m[1] ?? '');
  expect(scripts.length).toBeGreaterThan(0);
  for (const src of scripts) expect(src).toMatch(/^\/assets\/[\w.-]+\.js$/);
  const gzipped = scripts.reduce(
    (sum, src) => sum + gzipSync(readFileSync(join(DIST, src)), { level: 9 }).length,
    0,
  );
  console.log(
    `login page JavaScript: ${(gzipped / 1024).toFixed(1)} KB gzipped in ${scripts.length} file(s)`,
  );
  expect(gzipped).toBeLessThanOrEqual(BUDGET_BYTES);
});
