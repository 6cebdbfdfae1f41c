import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { createLogger } from '@svc/platform';

const dir = mkdtempSync(join(tmpdir(), 'logger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('appends JSON lines to a file, creating its directory, and filters by level', () => {
  const file = join(dir, 'nested', 'deeper', 'svcd.log');
  const logger = createLogger({ name: 'svcd', level: 'info', file });
  logger.info({ client: 'c1' }, 'connected');
  logger.debug('not written');
  createLogger({ name: 'svcd', level: 'warn', file }).warn('appended');

  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatchObject({ level: 'info', name: 'svcd', client: 'c1', msg: 'connected' });
  expect(lines[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT/);
  expect(lines[1]).toMatchObject({ level: 'warn', msg: 'appended' });
});
