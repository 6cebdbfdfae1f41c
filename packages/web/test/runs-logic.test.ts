import { expect, test } from 'vitest';
import {
  initialTargets,
  labelFilterValue,
  parseComposeSearch,
  runRequest,
  splitList,
  targetCountQuery,
  targetingBody,
  toBase64,
  type Targets,
} from '../src/lib/run-compose.js';
import {
  countStates,
  filterByState,
  jobDurationMs,
  outputPreview,
  parseStateFilter,
} from '../src/lib/run-jobs.js';
import { describeTargets, describeWork } from '../src/lib/run-summary.js';

const targets = (over: Partial<Targets>): Targets => ({ ...initialTargets({}), ...over });

test('compose search params: known keys kept, the rest dropped, operator normalised', () => {
  expect(
    parseComposeSearch({
      client_ids: 'a,b',
      tags: 'web',
      operator: 'and',
      command: 'uptime',
      evil: 'x',
      script_id: '',
    }),
  ).toEqual({ client_ids: 'a,b', tags: 'web', operator: 'AND', command: 'uptime' });
  expect(parseComposeSearch({ operator: 'XOR', labels: ['env:prod', 'os:linux'] })).toEqual({
    labels: 'env:prod,os:linux',
  });
  expect(initialTargets({ tags: 'web' }).kind).toBe('tags');
  expect(initialTargets({ labels: 'a:b' }).kind).toBe('labels');
  expect(initialTargets({ client_ids: 'x' })).toMatchObject({ kind: 'ids', clientIds: 'x', operator: 'OR' });
});

test('lists: trimmed, empties and duplicates dropped', () => {
  expect(splitList(' a, b,,a\nc ')).toEqual(['a', 'b', 'c']);
  expect(splitList(' , ')).toEqual([]);
});

test('targeting body: ids and groups combine; tags and labels carry the operator; nothing → undefined', () => {
  expect(targetingBody(targets({ clientIds: 'a, b', groupIds: 'g' }))).toEqual({
    client_ids: ['a', 'b'],
    group_ids: ['g'],
  });
  expect(targetingBody(targets({ kind: 'tags', tags: 'web,db', operator: 'AND' }))).toEqual({
    tags: { operator: 'AND', tags: ['web', 'db'] },
  });
  expect(targetingBody(targets({ kind: 'labels', labels: 'env:prod' }))).toEqual({
    labels: { operator: 'OR', labels: ['env:prod'] },
  });
  expect(targetingBody(targets({ kind: 'tags', clientIds: 'a' }))).toBeUndefined();
});

test('the live count query uses the /clients filter grammar: OR one filter, AND one per value', () => {
  const or = targetCountQuery(targets({ kind: 'tags', tags: 'web,db' }));
  expect(or?.getAll('filter[tags]')).toEqual(['web,db']);
  expect(or?.get('page[limit]')).toBe('1');
  const and = targetCountQuery(targets({ kind: 'tags', tags: 'web,db', operator: 'AND' }));
  expect(and?.getAll('filter[tags]')).toEqual(['web', 'db']);
  expect(targetCountQuery(targets({ clientIds: 'a,b', groupIds: 'g' }))?.get('filter[id|groups]')).toBe(
    'a,b,g',
  );
  expect(targetCountQuery(targets({ groupIds: 'g' }))?.get('filter[groups]')).toBe('g');
  expect(targetCountQuery(targets({ kind: 'labels', labels: 'env :prod' }))?.get('filter[labels]')).toBe(
    'env: prod',
  );
  expect(targetCountQuery(targets({}))).toBeUndefined();
  expect(labelFilterValue(' os:  linux ')).toBe('os: linux');
});

test('run request: command, typed script as base64 (UTF-8), library script by id', () => {
  const options = { interpreter: '', cwd: '/tmp', timeoutSec: 30, concurrent: true, abortOnError: false };
  const content = { command: 'uptime', script: 'echo héllo\n', scriptId: 's1' };
  expect(runRequest('command', content, options, { client_ids: ['a'] })).toEqual({
    path: '/commands',
    body: {
      command: 'uptime',
      timeout_sec: 30,
      cwd: '/tmp',
      client_ids: ['a'],
      execute_concurrently: true,
      abort_on_error: false,
    },
  });
  const script = runRequest('script', content, options, { tags: { operator: 'OR', tags: ['web'] } });
  expect(script.path).toBe('/scripts');
  expect(Buffer.from(script.body.script as string, 'base64').toString('utf8')).toBe('echo héllo\n');
  expect(runRequest('library', content, options, {}).body).toMatchObject({ script_id: 's1' });
  expect(toBase64('')).toBe('');
});

const job = (jid: string, status: string, extra: object = {}) => ({
  jid,
  client_id: jid,
  client_name: jid,
  status,
  exit_code: null,
  started_at: null,
  finished_at: null,
  error: '',
  result: { stdout: '', stderr: '' },
  ...extra,
});

test('states: parse the URL, filter and count', () => {
  expect(parseStateFilter('failed')).toBe('failed');
  expect(parseStateFilter('bogus')).toBe('all');
  const jobs = [job('a', 'failed'), job('b', 'successful'), job('c', 'failed')];
  expect(filterByState(jobs, 'failed').map((j) => j.jid)).toEqual(['a', 'c']);
  expect(filterByState(jobs, 'all')).toHaveLength(3);
  expect(countStates(jobs)).toEqual({ running: 0, successful: 1, failed: 2, unknown: 0 });
});

test('duration and output preview', () => {
  const now = Date.parse('2026-01-01T00:00:10Z');
  expect(jobDurationMs({ started_at: null, finished_at: null }, now)).toBeUndefined();
  expect(
    jobDurationMs({ started_at: '2026-01-01T00:00:00Z', finished_at: '2026-01-01T00:00:02.5Z' }, now),
  ).toBe(2500);
  expect(jobDurationMs({ started_at: '2026-01-01T00:00:00Z', finished_at: null }, now)).toBe(10_000);
  expect(outputPreview({ result: { stdout: '\n\nfirst\nsecond', stderr: 'err' }, error: '' })).toBe('first');
  expect(outputPreview({ result: { stdout: '', stderr: '' }, error: 'refused' })).toBe('refused');
  expect(outputPreview({ result: { stdout: 'x'.repeat(200), stderr: '' }, error: '' }, 10)).toBe(
    `${'x'.repeat(9)}…`,
  );
});

test('runs in a list: targets and work in a few words', () => {
  expect(describeTargets({ client_ids: ['a', 'b', 'c', 'd'], group_ids: ['g'] })).toBe(
    'clients a, b, c +1 + group g',
  );
  expect(describeTargets({ tags: { operator: 'AND', tags: ['web', 'db'] } })).toBe('tags web AND db');
  expect(describeTargets({})).toBe('—');
  expect(describeWork({ command: '#!/bin/sh\n\necho hi\n', is_script: true })).toBe('script: echo hi');
  expect(describeWork({ command: 'uptime', is_script: false })).toBe('uptime');
});
