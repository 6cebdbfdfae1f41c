import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig } from 'vitest/config';

const src = (pkg: string, file = 'index') =>
  fileURLToPath(new URL(`./packages/${pkg}/src/${file}.ts`, import.meta.url));

/**
 * Files that measure memory (RSS, the C heap, garbage collections) or how long a server takes to close slow
 * connections: they run one at a time after all the others, so that no other test file competes for the CPU or
 * memory while they measure.
 */
const ALONE = [
  'e2e/agent-memory.test.ts',
  'e2e/slow-clients.test.ts',
  'packages/platform/test/malloc-trim.test.ts',
  'packages/platform/test/memory-reclaim.test.ts',
  'packages/platform/test/relay-garbage.test.ts',
];

/**
 * Test files at once in the first group; they share each worker's module cache (isolate: false), which saves
 * loading the server's modules again for every file (183 s of a 2-core run's CPU, 2026-11-28). Most files wait on sockets, child processes and databases more than they
 * compute, so three keep two cores busy (CI measured 370 s with one worker, 232 s with two, 175 s with three).
 */
const WORKERS = 3;

/** What both groups share; the global setup and the reporters belong to the whole run (below). */
const shared = {
  resolve: {
    alias: [
      { find: /^@svc\/protocol$/, replacement: src('protocol') },
      { find: /^@svc\/platform$/, replacement: src('platform') },
      { find: /^@svc\/platform\/ssh2$/, replacement: src('platform', 'ssh2-loader') },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // expect.poll gives up after 1 s by default; a loaded CI machine can take longer to show what is awaited.
    expect: { poll: { timeout: 10_000 } },
  },
} as const;

export default defineConfig({
  test: {
    globalSetup: ['./test-support/agent-bundle-setup.ts'],
    reporters: ['default', './test-support/summary-reporter.ts'],
    projects: [
      mergeConfig(shared, {
        test: {
          name: 'parallel',
          include: ['packages/*/test/**/*.test.ts', 'e2e/**/*.test.ts'],
          exclude: ALONE,
          maxWorkers: WORKERS,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      }),
      mergeConfig(shared, {
        test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      }),
    ],
  },
});
