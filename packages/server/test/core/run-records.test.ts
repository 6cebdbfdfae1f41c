import { expect, test } from 'vitest';
import type { Job } from '@svc/protocol';
import { rerunBody, rerunClientIds } from '../../src/core/jobs/run-again.js';
import { csvCell, durationSec, runCsv } from '../../src/core/jobs/run-export.js';

test('CSV cells: quoted when needed, quotes doubled, formulas defused in text only', () => {
  expect(csvCell('plain')).toBe('plain');
  expect(csvCell('a,b')).toBe('"a,b"');
  expect(csvCell('say "hi"\n')).toBe('"say ""hi""\n"');
  expect(csvCell('=1+1')).toBe("'=1+1");
  expect(csvCell('@cmd')).toBe("'@cmd");
  expect(csvCell('-1', false)).toBe('-1');
  expect(csvCell(-1, false)).toBe('-1');
  expect(csvCell(null)).toBe('');
});

test('duration in seconds; empty until both ends are known', () => {
  expect(
    durationSec({ started_at: '2026-01-01T00:00:00.000Z', finished_at: '2026-01-01T00:00:01.250Z' }),
  ).toBe(1.25);
  expect(durationSec({ started_at: null, finished_at: '2026-01-01T00:00:00Z' })).toBeNull();
  expect(durationSec({ started_at: '2026-01-01T00:00:00Z', finished_at: null })).toBeNull();
});

const child = (client: string, status: Job['status']): Job => ({
  jid: `j-${client}`,
  status,
  started_at: null,
  finished_at: null,
  client_id: client,
  client_name: client,
  command: 'x',
  cwd: '',
  is_sudo: false,
  is_script: false,
  interpreter: '',
  pid: null,
  created_by: 'admin',
  created_at: '2026-01-01T00:00:00.000Z',
  timeout_sec: 60,
  exit_code: null,
  error: '',
  result: { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false },
});

test('the export pages through the children until a short page', async () => {
  const children = Array.from({ length: 5 }, (_, i) => child(`c${i}`, 'successful'));
  const asked: number[] = [];
  const chunks: string[] = [];
  const page = (offset: number, limit: number) => {
    asked.push(offset);
    return Promise.resolve(children.slice(offset, offset + limit));
  };
  for await (const chunk of runCsv(page, 2)) chunks.push(chunk);
  expect(asked).toEqual([0, 2, 4]);
  expect(chunks.join('').split('\r\n').filter(Boolean)).toHaveLength(6);
});

test('rerun targets: failed and unknown (not running), each once, in order; all takes every client', () => {
  const children = [
    child('a', 'failed'),
    child('b', 'successful'),
    child('c', 'unknown'),
    child('d', 'running'),
    child('a', 'failed'),
  ];
  expect(rerunClientIds(children, 'failed')).toEqual(['a', 'c']);
  expect(rerunClientIds(children, 'all')).toEqual(['a', 'b', 'c', 'd']);
});

test('a rerun repeats the options; a script goes back to base64', () => {
  const run = {
    jid: 'r',
    started_at: '',
    created_by: 'admin',
    client_ids: null,
    group_ids: ['g'],
    tags: null,
    labels: null,
    command: 'echo héllo\n',
    cwd: '/tmp',
    interpreter: 'sh',
    is_sudo: true,
    is_script: true,
    timeout_sec: 5,
    concurrent: false,
    abort_on_err: true,
  };
  const body = rerunBody(run, ['a']);
  expect('script' in body && body.script).toMatchObject({
    script: Buffer.from('echo héllo\n').toString('base64'),
    client_ids: ['a'],
    group_ids: null,
    cwd: '/tmp',
    interpreter: 'sh',
    is_sudo: true,
    timeout_sec: 5,
    execute_concurrently: false,
    abort_on_error: true,
  });
  expect(rerunBody({ ...run, is_script: false, command: 'uptime' }, ['b'])).toMatchObject({
    command: { command: 'uptime', client_ids: ['b'] },
  });
});
