import { describe, expect, test } from 'vitest';
import { AppError, parseListQuery, parseTimePeriod, type ListSpec } from '../src/index.js';

const at = (iso: string) => Date.parse(iso);
const period = (from: string, to: string) => ({ fromMs: at(from), toMs: at(to) });

describe('parseTimePeriod', () => {
  test('a prefix names the period of its last unit, in UTC', () => {
    expect(parseTimePeriod('2024')).toEqual(period('2024-01-01T00:00:00Z', '2025-01-01T00:00:00Z'));
    expect(parseTimePeriod('2024-02')).toEqual(period('2024-02-01T00:00:00Z', '2024-03-01T00:00:00Z'));
    expect(parseTimePeriod('2024-12')).toEqual(period('2024-12-01T00:00:00Z', '2025-01-01T00:00:00Z'));
    expect(parseTimePeriod('2024-02-29')).toEqual(period('2024-02-29T00:00:00Z', '2024-03-01T00:00:00Z'));
    expect(parseTimePeriod('2024-05-01T10')).toEqual(period('2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z'));
    expect(parseTimePeriod('2024-05-01 10:30')).toEqual(
      period('2024-05-01T10:30:00Z', '2024-05-01T10:31:00Z'),
    );
    expect(parseTimePeriod('2024-05-01T23:59:59')).toEqual(
      period('2024-05-01T23:59:59Z', '2024-05-02T00:00:00Z'),
    );
  });

  test('fractions name tenths, hundredths or one millisecond; further digits are ignored', () => {
    expect(parseTimePeriod('2024-05-01T10:30:00.1Z')).toEqual(
      period('2024-05-01T10:30:00.100Z', '2024-05-01T10:30:00.200Z'),
    );
    expect(parseTimePeriod('2024-05-01T10:30:00.123Z')).toEqual(
      period('2024-05-01T10:30:00.123Z', '2024-05-01T10:30:00.124Z'),
    );
    expect(parseTimePeriod('2024-05-01T10:30:00.123456789Z')).toEqual(
      period('2024-05-01T10:30:00.123Z', '2024-05-01T10:30:00.124Z'),
    );
  });

  test('an offset moves the period; a trailing * changes nothing', () => {
    expect(parseTimePeriod('2024-05-01T12:30+02:00')).toEqual(
      period('2024-05-01T10:30:00Z', '2024-05-01T10:31:00Z'),
    );
    expect(parseTimePeriod('2024-05-01T00:00:00.5-05:30')).toEqual(
      period('2024-05-01T05:30:00.500Z', '2024-05-01T05:30:00.600Z'),
    );
    expect(parseTimePeriod('2024-05*')).toEqual(parseTimePeriod('2024-05'));
    expect(parseTimePeriod(' 2024-05-01T10:30:00Z* ')).toEqual(parseTimePeriod('2024-05-01T10:30:00Z'));
  });

  test.each([
    'yesterday',
    '24-05-01',
    '2024-13',
    '2024-00',
    '2023-02-29',
    '2024-04-31',
    '2024-05-01T24',
    '2024-05-01T10:60',
    '2024-05-01T10:30:60',
    '2024-05-01T10Z',
    '2024-05-01+02:00',
    '2024-05-01T10:30+24:00',
    '2024-05-01T10:30:00.Z',
    '*5*',
    '2024-*-01',
    '',
  ])('%j is not a time', (value) => {
    expect(parseTimePeriod(value)).toBeUndefined();
  });
});

describe('time fields in the list grammar', () => {
  const spec: ListSpec = {
    resource: 'things',
    sortable: ['created_at'],
    defaultSort: 'created_at',
    filterable: ['name', 'created_at'],
    timeFields: ['created_at'],
    fields: ['name', 'created_at'],
  };

  test('time values, * and the empty value are accepted', () => {
    const query = parseListQuery({ 'filter[created_at]': '2024-05-01,2024-06-01T10:00:00Z,*' }, spec);
    expect(query.filters).toEqual([
      { fields: ['created_at'], values: ['2024-05-01', '2024-06-01T10:00:00Z', '*'] },
    ]);
    expect(parseListQuery({ 'filter[created_at]': '' }, spec).filters).toEqual([
      { fields: ['created_at'], values: [''] },
    ]);
  });

  test('a value that is not a time is a 400 naming it and showing the form', () => {
    let error: unknown;
    try {
      parseListQuery({ 'filter[created_at]': '2024-05-01,last week' }, spec);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).kind).toBe('invalid');
    expect((error as AppError).message).toBe(
      "filter[created_at]: 'last week' is not a time; use an RFC 3339 time or a prefix of one, e.g. " +
        '2024-05-01, 2024-05-01T10:30 or 2024-05-01T10:30:00Z (UTC unless an offset is given)',
    );
  });

  test('across text and time fields any value is taken (it then matches the text field only)', () => {
    expect(parseListQuery({ 'filter[*]': '*5*' }, spec).filters).toEqual([
      { fields: ['name', 'created_at'], values: ['*5*'] },
    ]);
    expect(parseListQuery({ 'filter[name|created_at]': 'x' }, spec).filters).toHaveLength(1);
  });
});
