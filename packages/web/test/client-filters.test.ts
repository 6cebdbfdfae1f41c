import { describe, expect, test } from 'vitest';
import {
  clientListQuery,
  isFiltered,
  nextSort,
  parseClientSearch,
  substringPattern,
} from '../src/lib/client-filters.js';

describe('clients page filters in the URL', () => {
  test('a clean URL search keeps what is valid and leaves defaults out', () => {
    expect(
      parseClientSearch({
        q: ' web ',
        state: 'connected',
        tags: 'a,b',
        group: 'prod-*',
        sort: '-hostname',
        page: '3',
        limit: '200',
        extra: 'dropped',
      }),
    ).toEqual({
      q: 'web',
      state: 'connected',
      tags: 'a,b',
      group: 'prod-*',
      sort: '-hostname',
      page: 3,
      limit: 200,
    });
    expect(parseClientSearch({ sort: 'name', page: 1, limit: 100 })).toEqual({});
  });

  test('values that cannot be right are dropped, so a hand-edited link still opens', () => {
    expect(
      parseClientSearch({ state: 'asleep', sort: '-password', page: '-2', limit: '7', q: '   ', tags: 3 }),
    ).toEqual({});
  });

  test('the search becomes the /clients list grammar', () => {
    const query = clientListQuery({
      q: 'web',
      state: 'disconnected',
      tags: 'a,b',
      group: 'g1',
      page: 3,
      limit: 50,
    });
    expect([...query.entries()]).toEqual([
      ['sort', 'name'],
      ['filter[*]', '*web*'],
      ['filter[connection_state]', 'disconnected'],
      ['filter[tags]', 'a,b'],
      ['filter[groups]', 'g1'],
      ['page[limit]', '50'],
      ['page[offset]', '100'],
    ]);
    expect(clientListQuery({}).toString()).toBe('sort=name&page%5Blimit%5D=100&page%5Boffset%5D=0');
  });

  test('free text is a substring unless it carries its own wildcards', () => {
    expect(substringPattern('db')).toBe('*db*');
    expect(substringPattern('db-*')).toBe('db-*');
  });

  test('a header click sorts ascending, then descending, then back to the default', () => {
    expect(nextSort(undefined, 'os')).toBe('os');
    expect(nextSort('os', 'os')).toBe('-os');
    expect(nextSort('-os', 'os')).toBeUndefined();
    expect(nextSort('-os', 'hostname')).toBe('hostname');
  });

  test('paging and sorting alone are no filter', () => {
    expect(isFiltered({ sort: '-id', page: 2 })).toBe(false);
    expect(isFiltered({ tags: 'x' })).toBe(true);
  });
});
