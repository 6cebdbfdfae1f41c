import { describe, expect, test } from 'vitest';
import { clientGroupParamsSchema } from '@svc/protocol';
import { TEST_FACTS } from '../../../../test-support/facts.js';
import { connectedRecord, type ClientRecord } from '../../src/core/clients/client-record.js';
import { compileGroupParams, isMember, matchView } from '../../src/core/client-groups/membership.js';

const record = (overrides: {
  id?: string;
  name?: string;
  tags?: string[];
  labels?: Record<string, string>;
  facts?: Partial<typeof TEST_FACTS>;
  address?: string;
  clientAuthId?: string;
  version?: string;
}): ClientRecord =>
  connectedRecord(
    {
      client_id: overrides.id ?? 'web-01',
      name: overrides.name ?? 'Web Server One',
      session_id: 'session',
      version: overrides.version ?? '0.9.12',
      tags: overrides.tags ?? ['Linux', 'web', 'prod-eu'],
      labels: overrides.labels ?? { city: 'Cologne', team: 'Ops Team', 'url:x': 'y' },
      facts: {
        ...TEST_FACTS,
        hostname: 'web01.example.com',
        os: 'Linux web01 6.1.0 x86_64 GNU/Linux',
        ipv4: ['192.168.1.10', '10.0.0.5'],
        ipv6: ['fe80::1', '2001:db8::10'],
        ...overrides.facts,
      },
    },
    {
      id: overrides.id ?? 'web-01',
      clientAuthId: overrides.clientAuthId ?? 'agents-eu',
      address: overrides.address ?? '203.0.113.x:51234',
      connectedAt: new Date('2030-01-01T00:00:00Z'),
    },
  );

const WEB = record({});
const BARE = record({ id: 'bare', tags: [], labels: {}, facts: { ipv4: [], ipv6: [] } });
const COLON = record({ id: 'colon', labels: { 'url:x': 'y', link: 'http://a', plain: 'ok' } });

/** [what, params as sent, client, member?] */
const CASES: [string, Record<string, unknown>, ClientRecord, boolean][] = [
  // rule 1: case-insensitive, exact or with wildcards anywhere
  ['exact client_id', { client_id: ['web-01'] }, WEB, true],
  ['exact client_id in other case', { client_id: ['WEB-01'] }, WEB, true],
  ['exact value must be the whole value', { client_id: ['web'] }, WEB, false],
  ['wildcard at the end', { name: ['web*'] }, WEB, true],
  ['wildcard at the start', { hostname: ['*.example.com'] }, WEB, true],
  ['wildcard at the start, no match', { hostname: ['*.example.org'] }, WEB, false],
  ['wildcard in the middle', { hostname: ['web*.com'] }, WEB, true],
  ['wildcards around a contained text', { os: ['*x86_64*'] }, WEB, true],
  ['several wildcards in order', { name: ['*web*one*'] }, WEB, true],
  ['several wildcards out of order', { name: ['*one*web*'] }, WEB, false],
  ['a lone wildcard matches any value', { os_kernel: ['*'] }, WEB, true],
  [
    'os_arch, os_family, os_kernel',
    { os_arch: ['AMD64'], os_family: ['debian'], os_kernel: ['linux'] },
    WEB,
    true,
  ],
  ['version with a wildcard', { version: ['0.9.*'] }, WEB, true],
  ['address as listed (masked, with port)', { address: ['203.0.113.*'] }, WEB, true],
  ['client_auth_id', { client_auth_id: ['AGENTS-*'] }, WEB, true],
  // rule 2: every supplied param must match
  ['two params both matching', { tag: ['web'], os_kernel: ['linux'] }, WEB, true],
  ['two params, one failing', { tag: ['web'], os_kernel: ['windows'] }, WEB, false],
  ['unset (null) params are ignored', { tag: ['web'], name: null, ipv4: null }, WEB, true],
  ['a group with no param set holds no client', {}, WEB, false],
  // rule 3: multi-valued fields match when any value matches; a list is OR
  ['any tag matches', { tag: ['db', 'WEB'] }, WEB, true],
  ['no tag matches', { tag: ['db', 'mail'] }, WEB, false],
  ['a tag wildcard', { tag: ['prod-*'] }, WEB, true],
  ['second ipv4 address matches', { ipv4: ['10.0.*'] }, WEB, true],
  ['ipv6 in other case', { ipv6: ['2001:DB8::*'] }, WEB, true],
  ['a client without tags matches no tag pattern', { tag: ['*'] }, BARE, false],
  ['a client without addresses matches no ipv4 pattern', { ipv4: ['*'] }, BARE, false],
  // rule 4: {and} / {or}
  ['and: every entry matched by some tag', { tag: { and: ['linux', 'web'] } }, WEB, true],
  ['and: one entry unmatched', { tag: { and: ['linux', 'db'] } }, WEB, false],
  ['and with wildcards', { tag: { and: ['lin*', '*-eu'] } }, WEB, true],
  ['or: one entry matched', { tag: { or: ['db', 'web'] } }, WEB, true],
  ['or: none matched', { tag: { or: ['db', 'mail'] } }, WEB, false],
  ['and on a single-valued field: the value must match each', { name: { and: ['web*', '*one'] } }, WEB, true],
  ['and on a single-valued field failing', { name: { and: ['web*', '*two'] } }, WEB, false],
  ['and on ipv4', { ipv4: { and: ['192.168.*', '10.*'] } }, WEB, true],
  // rule 5: labels
  ['label exact', { labels: ['city:Cologne'] }, WEB, true],
  ['label key and value in other case', { labels: ['CITY:cologne'] }, WEB, true],
  ['label with blanks around the colon', { labels: ['city : Cologne'] }, WEB, true],
  ['label with blanks and a multi-word value', { labels: ['team:  ops team'] }, WEB, true],
  ['label value wildcard', { labels: ['city:Col*'] }, WEB, true],
  ['label value wildcard in the middle', { labels: ['team:ops*team'] }, WEB, true],
  ['label value other', { labels: ['city:Berlin'] }, WEB, false],
  ['label key other', { labels: ['town:Cologne'] }, WEB, false],
  ['label spelled label', { label: ['city: cologne'] }, WEB, true],
  ['labels and', { labels: { and: ['city:Cologne', 'team:ops*'] } }, WEB, true],
  ['labels and failing', { labels: { and: ['city:Cologne', 'team:dev*'] } }, WEB, false],
  ['labels or', { labels: { or: ['city:Berlin', 'team:*'] } }, WEB, true],
  ['client labels with a colon in key are not covered', { labels: ['url:*'] }, COLON, false],
  ['client labels with a colon in value are not covered', { labels: ['link:*'] }, COLON, false],
  ['other labels of that client still match', { labels: ['plain:OK'] }, COLON, true],
  ['a client without labels', { labels: ['city:*'] }, BARE, false],
  ['labels combine with other params', { labels: ['city:cologne'], tag: ['db'] }, WEB, false],
];

describe('client group membership (spec 4.11 rules 1-5)', () => {
  test('has the cases the issue asks for', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  test.each(CASES)('%s', (_what, raw, client, member) => {
    expect(isMember(clientGroupParamsSchema.parse(raw), client)).toBe(member);
  });

  test('a changed record is matched by its new values (records are replaced, the lower-cased view follows)', () => {
    const matches = compileGroupParams(clientGroupParamsSchema.parse({ tag: ['db'] }));
    const before = record({ tags: ['web'] });
    expect(matches(matchView(before))).toBe(false);
    expect(matches(matchView({ ...before, tags: ['DB'] }))).toBe(true);
    expect(matches(matchView(before))).toBe(false);
  });
});

describe('client group params schema', () => {
  const problems = (raw: unknown): string[] => {
    const result = clientGroupParamsSchema.safeParse(raw);
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  test('returns every key, unset ones as null, label stored as labels', () => {
    const params = clientGroupParamsSchema.parse({ tag: ['a'], label: ['k:v'] });
    expect(Object.keys(params)).toEqual([
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
    ]);
    expect(params).toMatchObject({ tag: ['a'], labels: ['k:v'], name: null });
  });

  test.each([
    [{ tags: ['a'] }, 'did you mean "tag" for "tags"?'],
    [{ connection_state: ['connected'] }, 'Unrecognized key'],
    [{ tag: [] }, 'tag: must list at least one value'],
    [{ tag: { and: ['a'], or: ['b'] } }, 'tag'],
    [{ tag: {} }, 'tag'],
    [{ tag: { and: [] } }, 'tag'],
    [{ tag: 'web' }, 'tag'],
    [{ tag: [''] }, 'must not be empty'],
    [{ labels: ['nocolon'] }, 'must have the form key:value'],
    [{ labels: ['a:b:c'] }, 'one colon only'],
    [{ labels: [':v'] }, 'must name a label key'],
    [{ labels: ['ci*:v'] }, 'label value only'],
    [{ labels: ['a:b'], label: ['c:d'] }, 'not both'],
    [{ name: ['x'.repeat(257)] }, 'at most 256'],
  ])('refuses %j', (raw, message) => {
    expect(problems(raw).join(' | ')).toContain(message);
  });
});
