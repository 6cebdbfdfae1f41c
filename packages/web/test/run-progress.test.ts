import { expect, test } from 'vitest';
import { runProgress } from '../src/lib/run-progress.js';

const rows = (...statuses: string[]) => statuses.map((status) => ({ status }));

test('every row listed ended but svcd says the run is still running: not done (clients not reached yet)', () => {
  // A concurrent run creates its children window by window, a staged one batch by batch: early on every job
  // listed can have ended while targets have none yet.
  const progress = runProgress('running', rows('successful', 'failed', 'unknown'));
  expect(progress.done).toBe(false);
  expect(progress.text).toBe(
    'Still running: the 3 jobs listed ended; the clients not reached yet get theirs as the run goes on.',
  );
  expect(runProgress('running', []).done).toBe(false);
  expect(runProgress('running', []).text).toMatch(/^Still running: no job yet;/);
});

test('while jobs run or wait in the queue the page counts those that ended', () => {
  const progress = runProgress('running', rows('running', 'successful', 'queued', 'failed'));
  expect(progress).toEqual({ done: false, text: 'Still running: 2 of 4 jobs ended so far.' });
});

test('done as soon as svcd reports any end status of the run, whatever rows are still being read', () => {
  for (const status of ['successful', 'failed', 'unknown', 'cancelled', 'skipped', 'expired'])
    expect(runProgress(status, rows('successful')).done).toBe(true);
  expect(runProgress('successful', rows('successful')).text).toBe('The run is over: 1 job, every one ended.');
  expect(runProgress('failed', rows('running', 'failed')).done).toBe(true);
});
