import { describe, expect, test } from 'vitest';
import { clientListQueryOptions } from '../src/api/queries.js';
import type { ClientSearch } from '../src/lib/client-filters.js';

const key = (search: ClientSearch) => clientListQueryOptions(search).queryKey;

describe('the clients page query', () => {
  test('the shown columns and the saved view picked ask svcd for the same page (one cached answer)', () => {
    expect(key({ state: 'connected', cols: 'name,os_arch', view: 'v1' })).toEqual(
      key({ state: 'connected' }),
    );
  });

  test('a filter, sort, page or page size is another page', () => {
    const base = key({});
    for (const search of [
      { state: 'connected' },
      { q: 'web' },
      { tags: 'rack-7' },
      { group: 'prod' },
      { sort: '-os' },
      { page: 2 },
      { limit: 500 },
    ] satisfies ClientSearch[]) {
      expect(key(search)).not.toEqual(base);
    }
  });
});
