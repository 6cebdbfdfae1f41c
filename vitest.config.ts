import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string, file = 'index') =>
  fileURLToPath(new URL(`./packages/${pkg}/src/${file}.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@svc\/protocol$/, replacement: src('protocol') },
      { find: /^@svc\/platform$/, replacement: src('platform') },
      { find: /^@svc\/platform\/ssh2$/, replacement: src('platform', 'ssh2-loader') },
    ],
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'e2e/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['./test-support/agent-bundle-setup.ts'],
    reporters: ['default', './test-support/summary-reporter.ts'],
  },
});
