/** Properties of the list query grammar, checked on generated queries (fast-check, fixed seed). */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  AppError,
  applyListQuery,
  compileWildcard,
  ERROR_CODES,
  parseListQuery,
  type ListQuery,
  type ListSpec,
} from '../src/index.js';

const RUNS = { numRuns: 300, seed: 20_241_128 };

const FIELDS = ['id', 'name', 'os'] as const;
const spec: ListSpec = {
  resource: 'items',
  sortable: FIELDS,
  defaultSort: 'name',
  filterable: FIELDS,
  fields: FIELDS,
  pagination: { defaultLimit: 10, maxLimit: 100 },
};

const fieldSubset = fc.uniqueArray(fc.constantFrom(...FIELDS), { minLength: 1, maxLength: FIELDS.length });
/** A filter value as the grammar carries it: no comma (the separator), no blanks around it (trimmed). */
const filterValue = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 12 })
  .filter((s) => !s.includes(',') && s.trim() === s);

const listQuery: fc.Arbitrary<ListQuery> = fc.record(
  {
    sort: fc
      .uniqueArray(fc.constantFrom(...FIELDS), { minLength: 1, maxLength: 3 })
      .chain((fields) =>
        fc.tuple(
          ...fields.map((field) => fc.constantFrom('asc', 'desc').map((direction) => ({ field, direction }))),
        ),
      ),
    filters: fc.array(
      fc.record({ fields: fieldSubset, values: fc.array(filterValue, { minLength: 1, maxLength: 4 }) }),
      { maxLength: 4 },
    ),
    fields: fieldSubset,
    page: fc.record({
      limit: fc.integer({ min: 1, max: 100 }),
      offset: fc.integer({ min: 0, max: 1_000_000 }),
    }),
  },
  { requiredKeys: ['sort', 'filters', 'page'] },
);

/** The query string a client would send for `query`. */
function toSearchParams(query: ListQuery): URLSearchParams {
  const params = new URLSearchParams();
  params.append('sort', query.sort.map((s) => (s.direction === 'desc' ? '-' : '') + s.field).join(','));
  for (const filter of query.filters)
    params.append(`filter[${filter.fields.join('|')}]`, filter.values.join(','));
  if (query.fields) params.append(`fields[${spec.resource}]`, query.fields.join(','));
  if (query.page) {
    params.append('page[limit]', String(query.page.limit));
    params.append('page[offset]', String(query.page.offset));
  }
  return params;
}

/** What parseListQuery may throw: the grammar's own 400, nothing else. */
function expectGrammarError(err: unknown): void {
  expect(err).toBeInstanceOf(AppError);
  const appError = err as AppError;
  expect(appError.kind).toBe('invalid');
  for (const item of appError.toItems()) expect(item.code).toBe(ERROR_CODES.invalidQuery);
}

const listKey = fc.oneof(
  fc.constantFrom(
    'sort',
    'filter',
    'fields',
    'page',
    'page[limit]',
    'page[offset]',
    'filter[*]',
    'fields[items]',
  ),
  fc.constantFrom(...FIELDS).map((f) => `filter[${f}]`),
  fc.string({ maxLength: 8 }).map((s) => `filter[${s}]`),
  fc.string({ maxLength: 8 }).map((s) => `page[${s}]`),
  fc.string({ maxLength: 8 }).map((s) => `fields[${s}]`),
  fc.string({ maxLength: 12 }),
);
const rawValue = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
  fc.constantFrom('-', '--id', ',', '*', '-1', '1e999', '00', ' 5 ', '9007199254740993'),
  fc.object({ maxDepth: 1 }),
);

describe('list query grammar (properties)', () => {
  test('a query serialised as a client sends it parses back to itself', () => {
    fc.assert(
      fc.property(listQuery, (query) => {
        expect(parseListQuery(toSearchParams(query), spec)).toEqual(query);
      }),
      RUNS,
    );
  });

  test('any query object either parses or is refused with the grammar 400, never another error', () => {
    fc.assert(
      fc.property(fc.dictionary(listKey, rawValue, { maxKeys: 6 }), (raw) => {
        try {
          const query = parseListQuery(raw, spec);
          for (const s of query.sort) expect(spec.sortable).toContain(s.field);
          for (const f of query.filters)
            for (const field of f.fields) expect(spec.filterable).toContain(field);
          expect(query.page?.limit).toBeLessThanOrEqual(100);
          expect(query.page?.limit).toBeGreaterThanOrEqual(1);
        } catch (err) {
          expectGrammarError(err);
        }
      }),
      RUNS,
    );
  });

  test('an unknown sort, filter or fields name is always refused', () => {
    const unknown = fc.string({ minLength: 1, maxLength: 10 }).filter((s) => {
      const t = s.trim();
      return t !== '' && !(FIELDS as readonly string[]).includes(t) && !/[,|[\]*-]/.test(s);
    });
    fc.assert(
      fc.property(unknown, fc.constantFrom('sort', 'filter', 'fields'), (name, kind) => {
        const raw =
          kind === 'sort'
            ? { sort: name }
            : kind === 'filter'
              ? { [`filter[${name}]`]: 'x' }
              : { 'fields[items]': name };
        expect(() => parseListQuery(raw, spec)).toThrow(AppError);
      }),
      RUNS,
    );
  });

  test('pages of a list put together are the whole list, and count does not depend on the page', () => {
    const item = fc.record({
      id: fc.string({ maxLength: 4 }),
      name: fc.option(fc.string({ maxLength: 4 })),
      os: fc.string({ maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 40 }),
        listQuery,
        fc.integer({ min: 1, max: 7 }),
        (items, query, limit) => {
          const whole = applyListQuery(items, { ...query, page: { limit: 1000, offset: 0 } });
          const pages: unknown[] = [];
          for (let offset = 0; offset < whole.count + limit; offset += limit) {
            const page = applyListQuery(items, { ...query, page: { limit, offset } });
            expect(page.count).toBe(whole.count);
            expect(page.data.length).toBeLessThanOrEqual(limit);
            pages.push(...page.data);
          }
          expect(pages).toEqual(whole.data);
          expect(whole.count).toBeLessThanOrEqual(items.length);
        },
      ),
      RUNS,
    );
  });

  test('found by the wildcard property: a capital sigma at the end of a word matches its small letter', () => {
    expect(compileWildcard('ΟΔΟΣ')('οδοσ')).toBe(true);
    expect(compileWildcard('*Σ*')('ΑΣ')).toBe(true);
    expect(compileWildcard('οδος')('ΟΔΟΣ')).toBe(true);
  });

  test('wildcards: never throw on any pattern; `*x*` matches every text that contains x, in any case', () => {
    // Letters whose case mapping is not one code unit to one (Greek final sigma, dotted I), and regex characters.
    const tricky = fc.constantFrom(
      'a',
      'Z',
      'Σ',
      'σ',
      'ς',
      'Ω',
      'İ',
      'i',
      ' ',
      '.',
      '%',
      '_',
      '\\',
      '(',
      '+',
      '?',
      '[',
      '^',
      '$',
      '💥',
    );
    const noStar = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 8 }).filter((s) => !s.includes('*')),
      fc.string({ unit: tricky, maxLength: 8 }),
    );
    fc.assert(
      fc.property(noStar, noStar, noStar, (before, inner, after) => {
        const text = before + inner + after;
        expect(compileWildcard(`*${inner}*`)(text)).toBe(true);
        expect(compileWildcard(`*${inner.toUpperCase()}*`)(text.toLowerCase())).toBe(true);
        expect(compileWildcard(`${before}*`)(text)).toBe(true);
        expect(compileWildcard(`*${after}`)(text)).toBe(true);
        expect(compileWildcard(text)(text.toUpperCase())).toBe(true);
      }),
      RUNS,
    );
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 30 }),
        fc.string({ unit: 'binary', maxLength: 30 }),
        (p, t) => {
          expect(typeof compileWildcard(p)(t)).toBe('boolean');
        },
      ),
      RUNS,
    );
  });
});
