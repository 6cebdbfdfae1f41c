import { describe, expect, test } from 'vitest';
import {
  clientListQuery,
  isFiltered,
  nextSort,
  parseClientSearch,
  runTargetOf,
  searchOfView,
  substringPattern,
  viewSearchString,
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

describe('saved views and bulk targets', () => {
  test('cols and view survive the URL when they look right, and are dropped otherwise', () => {
    expect(parseClientSearch({ cols: 'name,os_arch', view: 'Ab_3-x' })).toEqual({
      cols: 'name,os_arch',
      view: 'Ab_3-x',
    });
    expect(parseClientSearch({ cols: 'name;drop', view: 'a b' })).toEqual({});
  });

  test('a view keeps filters, sort, page size and columns in a fixed order, never the page or its own id', () => {
    const search = parseClientSearch({
      cols: 'name,tags',
      sort: '-os',
      tags: 'web,db',
      q: 'srv',
      page: '4',
      view: 'v1',
      limit: '200',
    });
    const text = viewSearchString(search);
    expect(text).toBe('q=srv&tags=web%2Cdb&sort=-os&limit=200&cols=name%2Ctags');
    expect(searchOfView(text, 'v2')).toEqual({
      q: 'srv',
      tags: 'web,db',
      sort: '-os',
      limit: 200,
      cols: 'name,tags',
      view: 'v2',
    });
    expect(viewSearchString({})).toBe('');
  });

  test('"all matching" goes as the filter where the run API targets the same clients, else as ids', () => {
    expect(runTargetOf({ tags: 'web,db' })).toEqual({ tags: 'web,db' });
    expect(runTargetOf({ group: 'prod' })).toEqual({ group_ids: 'prod' });
    expect(runTargetOf({ tags: 'web', sort: '-os', limit: 200 })).toEqual({ tags: 'web' });
    // No run target for free text, the connection state, wildcard groups or two kinds at once.
    expect(runTargetOf({ q: 'srv' })).toBe('ids');
    expect(runTargetOf({ tags: 'web', state: 'connected' })).toBe('ids');
    expect(runTargetOf({ group: 'prod-*' })).toBe('ids');
    expect(runTargetOf({ group: 'prod', tags: 'web' })).toBe('ids');
    expect(runTargetOf({})).toBe('ids');
  });
});
