import { CLIENT_GROUP_PARAM_KEYS, clientGroupParamsSchema } from '@svc/protocol';
import { describe, expect, test } from 'vitest';
import {
  describeRule,
  hasRule,
  PARAM_KEYS,
  nextFreeKey,
  paramsOf,
  patternsOf,
  rowsOf,
  type RuleRow,
} from '../src/lib/group-rules.js';

describe('client group rule editor ↔ params', () => {
  test("the editor offers exactly the API's params, in its order", () => {
    expect(PARAM_KEYS).toEqual(CLIENT_GROUP_PARAM_KEYS);
  });

  test('rows become the API params: any = a list, and/or objects, unset keys null', () => {
    const rows: RuleRow[] = [
      { key: 'tag', mode: 'any', text: 'web, db ,' },
      { key: 'labels', mode: 'and', text: 'city:Berlin,team: ops' },
      { key: 'hostname', mode: 'or', text: '*.example.com' },
    ];
    const params = paramsOf(rows);
    expect(params.tag).toEqual(['web', 'db']);
    expect(params.labels).toEqual({ and: ['city:Berlin', 'team: ops'] });
    expect(params.hostname).toEqual({ or: ['*.example.com'] });
    expect(params.client_id).toBeNull();
    expect(Object.keys(params).sort()).toEqual(
      [
        'client_id',
        'name',
        'os',
        'os_arch',
        'os_family',
        'os_kernel',
        'hostname',
        'ipv4',
        'ipv6',
        'tag',
        'version',
        'address',
        'client_auth_id',
        'labels',
      ].sort(),
    );
    // What the editor sends is what the API's own schema accepts, unchanged.
    expect(clientGroupParamsSchema.parse(params)).toEqual(params);
  });

  test('rows without a pattern leave their param unset; the later row of one key wins', () => {
    expect(paramsOf([{ key: 'name', mode: 'any', text: ' , ' }]).name).toBeNull();
    expect(
      paramsOf([
        { key: 'os', mode: 'any', text: 'linux' },
        { key: 'os', mode: 'and', text: 'win*' },
      ]).os,
    ).toEqual({ and: ['win*'] });
    expect(hasRule([{ key: 'name', mode: 'any', text: ' ' }])).toBe(false);
    expect(hasRule([{ key: 'name', mode: 'any', text: 'a' }])).toBe(true);
  });

  test('stored params become rows in the API key order, and back to the same params', () => {
    const stored = {
      ...paramsOf([]),
      labels: ['city:Cologne'],
      client_id: { or: ['web-*', 'db-1'] },
      version: { and: ['1.*', '*-rc'] },
    };
    const rows = rowsOf(stored);
    expect(rows).toEqual([
      { key: 'client_id', mode: 'or', text: 'web-*, db-1' },
      { key: 'version', mode: 'and', text: '1.*, *-rc' },
      { key: 'labels', mode: 'any', text: 'city:Cologne' },
    ]);
    expect(paramsOf(rows)).toEqual(stored);
  });

  test('the other spelling "label" is read as labels', () => {
    expect(rowsOf({ label: ['a:b'] })).toEqual([{ key: 'labels', mode: 'any', text: 'a:b' }]);
  });

  test('patterns split at commas and are trimmed', () => {
    expect(patternsOf(' a ,b,, c ')).toEqual(['a', 'b', 'c']);
    expect(patternsOf('')).toEqual([]);
  });

  test('a new row takes the first unused key', () => {
    expect(nextFreeKey([])).toBe('client_id');
    expect(nextFreeKey([{ key: 'client_id', mode: 'any', text: '' }])).toBe('name');
  });

  test('the one-line summary names every rule', () => {
    expect(describeRule({ tag: ['web', 'db'], labels: { and: ['a:b', 'c:d'] } })).toBe(
      'tag (web or db) AND labels (a:b and c:d)',
    );
    expect(describeRule({ name: ['x'] })).toBe('name x');
    expect(describeRule(paramsOf([]))).toBe('no rule: holds no client');
  });
});
