import { expect, test } from 'vitest';
import { applyLiveMessages, MAX_LIVE_OUTPUT, mergeLive } from '../src/lib/run-follow.js';
import type { ChildJob } from '../src/lib/run-jobs.js';

const job = (jid: string, over: Partial<ChildJob> = {}): ChildJob => ({
  jid,
  client_id: `c-${jid}`,
  client_name: `client ${jid}`,
  status: 'running',
  exit_code: null,
  started_at: '2026-01-01T00:00:00.000Z',
  finished_at: null,
  error: '',
  result: { stdout: '', stderr: '' },
  ...over,
});
const chunk = (jid: string, stdout: string, stderr = '') => ({
  chunk: { jid, client_id: `c-${jid}`, client_name: `client ${jid}`, result: { stdout, stderr } },
});
const final = (jid: string, status: string, stdout: string) => ({
  final: {
    jid,
    client_id: `c-${jid}`,
    status,
    exit_code: status === 'successful' ? 0 : 1,
    error: '',
    result: { stdout, stderr: '' },
  },
});

test('chunks append output to a running row; a final record replaces it and later chunks are ignored', () => {
  let live = applyLiveMessages(new Map(), [
    chunk('a', ''),
    chunk('a', 'one\n'),
    chunk('a', 'two\n', 'warn\n'),
  ]);
  expect(live.get('a')).toMatchObject({
    status: 'running',
    result: { stdout: 'one\ntwo\n', stderr: 'warn\n' },
  });
  live = applyLiveMessages(live, [final('a', 'successful', 'one\ntwo\nthree\n'), chunk('a', 'late')]);
  expect(live.get('a')).toMatchObject({
    status: 'successful',
    exit_code: 0,
    result: { stdout: 'one\ntwo\nthree\n' },
  });
});

test('an empty batch keeps the same map (no render); live output is capped', () => {
  const live = applyLiveMessages(new Map(), [
    chunk('a', 'x'.repeat(MAX_LIVE_OUTPUT - 1)),
    chunk('a', 'yyyy'),
  ]);
  expect(applyLiveMessages(live, [])).toBe(live);
  expect(live.get('a')?.result.stdout).toHaveLength(MAX_LIVE_OUTPUT);
});

test('merge: live rows replace running REST rows, a stored end wins, rows REST has not listed come last', () => {
  const base = [job('a'), job('b', { status: 'failed', exit_code: 2 }), job('c')];
  const live = applyLiveMessages(new Map(), [
    chunk('a', 'out'),
    final('b', 'successful', 'stale'),
    final('c', 'failed', 'bad'),
    chunk('d', 'new'),
  ]);
  const rows = mergeLive(base, live);
  expect(rows.map((r) => [r.jid, r.status])).toEqual([
    ['a', 'running'],
    ['b', 'failed'],
    ['c', 'failed'],
    ['d', 'running'],
  ]);
  expect(rows[0]).toMatchObject({ started_at: '2026-01-01T00:00:00.000Z', result: { stdout: 'out' } });
  expect(mergeLive(base, new Map())).toEqual(base);
});
