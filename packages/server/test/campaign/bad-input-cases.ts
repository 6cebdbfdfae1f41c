/**
 * Bad requests for one operation of the served OpenAPI document, drawn from a seeded generator so every run sends
 * the same ones: hostile path parameters, malformed list queries, bodies of the wrong shape, strange content types.
 */
import type { JsonSchema, ServedOperation } from './served-api.js';
import { concretePath } from './served-api.js';

/** mulberry32: a small, fast, seedable PRNG; deterministic across runs and machines. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface BadRequest {
  /** What the case tries, for the failure message. */
  kind: string;
  method: string;
  /** Path and query, as sent on the wire. */
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** Values the answer may legitimately repeat back (an id in "no client x"). */
  echoed: string[];
}

/** Ids that try to leave their directory, end a C string, or break a parser. Already percent-encoded. */
export const HOSTILE_IDS: readonly string[] = [
  '..',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%2e%2e',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '%252e%252e%252f',
  '..%5C..%5Cwindows',
  'a%00b',
  '%00',
  '%',
  '%zz',
  '%ff%fe',
  '%C0%AE%C0%AE',
  '%E2%80%AE%E2%80%8B',
  '%F0%9F%92%A5',
  'e%CC%81',
  '-1',
  '0',
  '9007199254740993',
  '1e309',
  'NaN',
  '%20',
  '%0d%0aX-Injected:%201',
  "'%20OR%201=1--",
  '%22%3E%3Cscript%3E',
  '__proto__',
  'constructor',
  'CON',
  '.',
  '*',
  'a'.repeat(120),
  'b'.repeat(5000),
];

const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '../../../etc/passwd',
  '..\\..\\windows',
  '\u202e\u200b\ufeff',
  '💥'.repeat(50),
  'e\u0301',
  '\ud800',
  '\r\nX-Injected: 1',
  "' OR 1=1 --",
  '"><script>alert(1)</script>',
  '${jndi:ldap://x}',
  '%s%n%x',
  '*'.repeat(2000),
];

const NASTY_NUMBERS: readonly number[] = [
  -1,
  0,
  -0,
  1.5,
  2 ** 31,
  2 ** 53 + 2,
  -(2 ** 63),
  1e308,
  -1e308,
  Number.MIN_VALUE,
];

/** Values of every JSON type, none of them what a field probably wants. */
const WRONG_VALUES: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1e308,
  'x',
  '',
  [],
  [null],
  {},
  { nested: { deeper: [1, 'two'] } },
];

export function pick<T>(random: () => number, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

/** A value that fits `schema` as far as a simple reading of it goes: the base that mutations then spoil. */
export function plausible(schema: JsonSchema | undefined, random: () => number, depth = 0): unknown {
  if (!schema || depth > 4) return 'x';
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return pick(random, schema.enum);
  if (schema.default !== undefined) return schema.default;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants?.length) return plausible(pick(random, variants), random, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const object: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(schema.properties ?? {}))
        if (schema.required?.includes(key) || random() < 0.5)
          object[key] = plausible(property, random, depth + 1);
      return object;
    }
    case 'array':
      return [plausible(schema.items, random, depth + 1)];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return (
        'campaign-' +
        Math.floor(random() * 1000)
          .toString(36)
          .padEnd(schema.minLength ?? 0, 'x')
      );
  }
}

/** Deeply nested arrays: a JSON parser must refuse or survive them, never overflow the stack into a 500. */
const deepJson = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** Bodies derived from the operation's request schema, each spoiled in one way. */
export function badBodies(schema: JsonSchema, random: () => number): { kind: string; payload: string }[] {
  const base = plausible(schema, random);
  const object =
    base && typeof base === 'object' && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
  const keys = Object.keys(schema.properties ?? {});
  const bodies: { kind: string; payload: string }[] = [
    { kind: 'plausible body', payload: JSON.stringify(base) },
    { kind: 'empty object', payload: '{}' },
    { kind: 'extra field', payload: JSON.stringify({ ...object, campaign_extra: 1 }) },
    { kind: 'array body', payload: JSON.stringify([object]) },
    { kind: 'string body', payload: '"x"' },
    { kind: 'number body', payload: '12345' },
    { kind: 'null body', payload: 'null' },
    { kind: 'truncated JSON', payload: JSON.stringify(object).slice(0, -1) },
    { kind: 'not JSON', payload: "{'single': quotes}" },
    { kind: 'proto poisoning', payload: `{"__proto__":{"isAdmin":true},${JSON.stringify(object).slice(1)}` },
    {
      kind: 'constructor poisoning',
      payload: '{"constructor":{"prototype":{"isAdmin":true}}}',
    },
    { kind: 'deep nesting', payload: deepJson(5000) },
    { kind: 'BOM before JSON', payload: '\ufeff' + JSON.stringify(object) },
    { kind: 'duplicate keys', payload: `{"a":1,"a":2,${JSON.stringify(object).slice(1)}` },
  ];
  for (const key of keys) {
    const spoiled = (kind: string, value: unknown) => {
      const without = { ...object };
      delete without[key];
      bodies.push({
        kind: `${key} ${kind}`,
        payload: JSON.stringify(value === undefined ? without : { ...object, [key]: value }),
      });
    };
    spoiled('missing', undefined);
    spoiled('wrong type', pick(random, WRONG_VALUES));
    spoiled(
      random() < 0.5 ? 'nasty string' : 'nasty number',
      pick(random, [...NASTY_STRINGS, ...NASTY_NUMBERS]),
    );
  }
  // The expensive ones once per operation, on a field the seed picks.
  if (keys.length > 0) {
    const key = pick(random, keys);
    bodies.push({
      kind: `${key} huge string`,
      payload: JSON.stringify({ ...object, [key]: 'h'.repeat(200_000) }),
    });
    bodies.push({
      kind: `${key} huge array`,
      payload: JSON.stringify({ ...object, [key]: Array.from({ length: 20_000 }, (_, i) => `v${i}`) }),
    });
  }
  return bodies;
}

/** Malformed uses of the list grammar (sort, filter, fields, page) and of the operation's own parameters. */
export function badQueries(op: ServedOperation, random: () => number): string[] {
  const names = (op.operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
  const queries: string[] = [];
  if (names.includes('sort')) {
    const filterField = names.find((n) => n.startsWith('filter[')) ?? 'filter[id]';
    const fieldsParam = names.find((n) => n.startsWith('fields[')) ?? 'fields[x]';
    queries.push(
      'sort=',
      'sort=-',
      'sort=--id',
      'sort=nope',
      'sort=id,,',
      'sort[]=id',
      'sort[x]=id',
      `sort=${'-'.repeat(5000)}`,
      'filter=x',
      'filter[]=x',
      'filter[nope]=x',
      'filter[id][deeper]=x',
      `${encodeURIComponent(filterField)}=${'*'.repeat(3000)}a`,
      `${encodeURIComponent(filterField)}=${encodeURIComponent('(a+)+$[')}`,
      `${encodeURIComponent(filterField)}=%00`,
      `${encodeURIComponent(filterField)}=${'x,'.repeat(3000)}`,
      'filter[id|nope]=x',
      'filter[*]=',
      'filter[created_at]=2024-13-45',
      'filter[connected_at]=not-a-time',
      'fields=id',
      'fields[nope]=id',
      `${encodeURIComponent(fieldsParam)}=nope`,
      `${encodeURIComponent(fieldsParam)}=`,
      'page=1',
      'page[nope]=1',
      'page[limit]=-1',
      'page[limit]=0',
      'page[limit]=abc',
      'page[limit]=1e999',
      'page[limit]=99999999999999999999999',
      'page[offset]=-5',
      'page[offset]=1.5',
      'page[limit]=1&page[limit]=2',
      'page[limit][x]=1',
    );
  }
  for (const name of names.filter((n) => !/^(sort|filter\[|fields\[|page\[)/.test(n))) {
    const key = encodeURIComponent(name);
    for (const value of [
      '',
      '-1',
      'abc',
      '1e999',
      '%00',
      '%ff',
      'x'.repeat(5000),
      '..%2F..%2F',
      'true&' + key + '=false',
    ])
      queries.push(`${key}=${value}`);
    queries.push(`${key}[]=1`, `${key}[a][b]=1`);
  }
  queries.push('%', '%%', '&&&', '=x', '?x=1', `${'q'.repeat(2000)}=1`, 'a=%E2%82');
  // A random sample keeps the count bounded while the seed keeps it the same every run.
  return queries.filter(() => random() < 0.7);
}

/** Content types other than application/json, for operations that take a body. */
export const OTHER_CONTENT_TYPES: readonly string[] = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=latin1',
  'application/json-patch+json',
  'application/octet-stream',
  'application/',
  ';;;',
  'application/json, text/plain',
];

/** Every bad request for one operation; `auth` is sent with all of them so they reach the handlers. */
export function casesFor(op: ServedOperation, auth: string, random: () => number): BadRequest[] {
  const cases: BadRequest[] = [];
  const headers = { authorization: auth };
  const plainPath = concretePath(op.path, () => 'campaign-none');
  const bodyHeaders = { ...headers, 'content-type': 'application/json' };
  const validBody = op.operation.requestBody
    ? JSON.stringify(plausible(op.operation.requestBody.content['application/json'].schema, random))
    : undefined;
  const withBody = (payload: string | undefined) => (payload === undefined ? {} : { payload });

  for (const id of HOSTILE_IDS) {
    if (!op.path.includes('{')) break;
    const url = concretePath(op.path, () => id);
    cases.push({
      kind: `hostile id ${id.slice(0, 40)}`,
      method: op.method,
      url,
      headers: validBody ? bodyHeaders : headers,
      ...withBody(validBody),
      echoed: [id, safeDecode(id)],
    });
  }
  for (const query of badQueries(op, random))
    cases.push({
      kind: `query ${query.slice(0, 60)}`,
      method: op.method,
      url: `${plainPath}?${query}`,
      headers: validBody ? bodyHeaders : headers,
      ...withBody(validBody),
      echoed: [query, safeDecode(query)],
    });
  const schema = op.operation.requestBody?.content['application/json'].schema;
  if (schema) {
    for (const body of badBodies(schema, random))
      cases.push({
        kind: `body: ${body.kind}`,
        method: op.method,
        url: plainPath,
        headers: bodyHeaders,
        payload: body.payload,
        echoed: [],
      });
    for (const contentType of OTHER_CONTENT_TYPES)
      cases.push({
        kind: `content type ${contentType}`,
        method: op.method,
        url: plainPath,
        headers: { ...headers, 'content-type': contentType },
        payload: validBody ?? '{}',
        echoed: [],
      });
    cases.push({
      kind: 'JSON without content type',
      method: op.method,
      url: plainPath,
      headers,
      payload: '{}',
      echoed: [],
    });
  } else if (op.method !== 'GET') {
    cases.push({
      kind: 'unexpected body',
      method: op.method,
      url: plainPath,
      headers: bodyHeaders,
      payload: '{"campaign":"unexpected"}',
      echoed: [],
    });
  }
  return cases;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
