import { expect, test } from 'vitest';
import { closestKey, unknownKeyHints } from '../src/api/key-hints.js';

const KEYS = ['tag', 'name', 'os_family', 'hostname', 'labels', 'label'];

test.each([
  ['tags', 'tag'],
  ['TAG', 'tag'],
  ['Hostname', 'hostname'],
  ['names', 'name'],
  ['os_famly', 'os_family'],
  ['hostnmae', 'hostname'],
  ['labl', 'label'],
])('%s is taken for %s', (unknown, meant) => {
  expect(closestKey(unknown, KEYS)).toBe(meant);
});

test.each(['colour', 'id', 'x', 'os', 'tunnels'])('%s has no likely meaning', (unknown) => {
  expect(closestKey(unknown, KEYS)).toBeUndefined();
});

test('the hint names every unknown field that has a likely meaning, and nothing for other issues', () => {
  const hint = unknownKeyHints(KEYS);
  expect(hint({ code: 'unrecognized_keys', keys: ['tags', 'colour', 'Name'] })).toBe(
    'did you mean "tag" for "tags", "name" for "Name"?',
  );
  expect(hint({ code: 'unrecognized_keys', keys: ['colour'] })).toBeUndefined();
  expect(hint({ code: 'invalid_type' })).toBeUndefined();
});
