import { expect, test } from 'vitest';
import { parseAuth } from '../src/config/auth.js';
import { parseLabel, parseLabels } from '../src/config/labels.js';

test('parseAuth splits at the first colon', () => {
  expect(parseAuth('client1:pass-1234')).toEqual({ id: 'client1', password: 'pass-1234' });
  expect(parseAuth('client1:pa:ss')).toEqual({ id: 'client1', password: 'pa:ss' });
});

test.each([
  ['client1', /no colon/],
  [':secret', /id before the colon is empty/],
  ['client1:', /password after the colon is empty/],
  [':', /id before the colon is empty/],
  [`${'a'.repeat(101)}:x`, /at most 100/],
  [`a:${'x'.repeat(101)}`, /at most 100/],
])('parseAuth refuses %j', (bad, message) => {
  expect(() => parseAuth(bad)).toThrow(message);
});

test('parseAuth never echoes the password', () => {
  expect.assertions(1);
  try {
    parseAuth(`a:${'s3cr3t'.repeat(20)}`);
  } catch (error) {
    expect((error as Error).message).not.toContain('s3cr3t');
  }
});

test('labels are key:value split at the first colon', () => {
  expect(parseLabel('env:prod')).toEqual(['env', 'prod']);
  expect(parseLabel(' url : http://x:1 ')).toEqual(['url', 'http://x:1']);
  expect(parseLabel('empty:')).toEqual(['empty', '']);
  expect(parseLabels(['a:1', 'b:2', 'a:3'])).toEqual({ a: '3', b: '2' });
});

test.each([
  ['envprod', /no colon/],
  [':prod', /key is empty/],
  [`${'k'.repeat(257)}:v`, /at most 256/],
])('parseLabel refuses %j', (bad, message) => {
  expect(() => parseLabel(bad)).toThrow(message);
});
