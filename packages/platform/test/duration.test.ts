import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { prefault } from 'zod/mini';
import { durationSchema, formatDuration, parseDuration } from '@svc/platform';

describe('parseDuration', () => {
  test.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1d2h3m4s5ms', 93_784_005],
    ['1.5s', 1500],
    ['30', 30_000],
    ['0', 0],
    [' 45s ', 45_000],
  ])('%s = %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  test.each([
    '',
    '   ',
    'abc',
    '10x',
    '-5s',
    '1h 30m',
    's',
    '5 s',
    '1e3',
    '10M',
    '1h-30m',
    '9'.repeat(20) + 'd',
  ])('rejects %j with a message naming the value and the accepted forms', (text) => {
    expect(() => parseDuration(text)).toThrow(
      `invalid duration ${JSON.stringify(text)}: use a number of seconds`,
    );
  });
});

describe('formatDuration', () => {
  test.each([
    [0, '0s'],
    [500, '500ms'],
    [1500, '1s500ms'],
    [600_000, '10m'],
    [5_400_000, '1h30m'],
    [90 * 86_400_000, '90d'],
  ])('%d ms = %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});

describe('durationSchema', () => {
  const parse = (value: unknown) => durationSchema.safeParse(value);

  test('accepts whole seconds and duration strings, giving milliseconds', () => {
    expect(parse(30).data).toBe(30_000);
    expect(parse(0).data).toBe(0);
    expect(parse('10m').data).toBe(600_000);
    expect(parse('15').data).toBe(15_000);
  });

  test.each([-1, 1.5, 'soon', true, [], {}])('rejects %j', (value) => {
    const result = parse(value);
    expect(result.success).toBe(false);
  });

  test('says what a duration looks like when the type is wrong', () => {
    const result = z.object({ t: durationSchema }).safeParse({ t: true });
    expect(result.error?.issues[0]?.message).toBe(
      'expected a duration (a number of seconds or a value such as 500ms, 30s, 10m, 2h, 1d or 1h30m), got boolean true',
    );
  });

  test('a prefault in input form is parsed like a configured value', () => {
    expect(z.object({ t: prefault(durationSchema, '2h') }).parse({}).t).toBe(7_200_000);
  });
});
