import { expect, test } from 'vitest';
import { RunWatch, type RunOutcome } from '../../../src/core/alerts/run-watch.js';
import { ManualTimers, settle } from './manual-timers.js';

function setup() {
  const timers = new ManualTimers();
  const states = new Map<string, RunOutcome>();
  let reads = 0;
  const failed: string[] = [];
  const watch = new RunWatch({
    outcome: (jid) => {
      reads += 1;
      return Promise.resolve(states.get(jid));
    },
    failed: (jid) => failed.push(jid),
    timers,
    logger: { warn: () => undefined },
    settleMs: 100,
  });
  const set = (jid: string, status: string, failedCount = 0) =>
    states.set(jid, { status, counts: { failed: failedCount }, schedule_id: null });
  return { watch, timers, set, failed, reads: () => reads };
}

test('a run that ended failed when dispatched is reported at once, exactly once', async () => {
  const { watch, timers, set, failed } = setup();
  set('r1', 'failed', 2);
  watch.dispatched('r1');
  await settle();
  watch.jobFinished();
  timers.advance(100);
  await settle();
  expect(failed).toEqual(['r1']);
});

test('a run still running is looked at again after job ends, coalesced, until it ends', async () => {
  const { watch, timers, set, failed, reads } = setup();
  set('r1', 'running');
  watch.dispatched('r1');
  await settle();
  expect(reads()).toBe(1);
  for (let i = 0; i < 50; i += 1) watch.jobFinished();
  timers.advance(100);
  await settle();
  expect(reads()).toBe(2);
  expect(failed).toEqual([]);
  set('r1', 'failed', 1);
  watch.jobFinished();
  timers.advance(100);
  await settle();
  expect(failed).toEqual(['r1']);
});

test('a successful run raises nothing and is no longer followed', async () => {
  const { watch, timers, set, failed, reads } = setup();
  set('ok', 'successful');
  watch.dispatched('ok');
  await settle();
  watch.jobFinished();
  timers.advance(100);
  await settle();
  expect(failed).toEqual([]);
  expect(reads()).toBe(1);
});

test('after close nothing is read (svcd stopping: runs stopped at shutdown report in after the alerts closed)', async () => {
  const { watch, set, failed, reads } = setup();
  set('late', 'failed', 1);
  watch.close();
  watch.dispatched('late');
  await settle();
  expect(reads()).toBe(0);
  expect(failed).toEqual([]);
});
