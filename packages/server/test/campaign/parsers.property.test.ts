/**
 * Properties of svcd's parsers on generated input (fast-check, fixed seed): client-group rules, tunnel requests
 * and the configuration loader. Each either accepts its input or refuses it with its own domain error.
 */
import fc from 'fast-check';
import { stringify } from 'smol-toml';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '@svc/platform';
import {
  AppError,
  clientGroupParamsSchema,
  EMPTY_CLIENT_GROUP_PARAMS,
  type ClientGroupParams,
} from '@svc/protocol';
import { TEST_FACTS } from '../../../../test-support/facts.js';
import { connectedRecord, type ClientRecord } from '../../src/core/clients/client-record.js';
import { isMember } from '../../src/core/client-groups/membership.js';
import { parseSvcdConfig, svcdConfigSchema } from '../../src/config/schema.js';
import { aclAllows, parseAcl } from '../../src/core/tunnels/acl.js';
import { parseDurationMs, parseTunnelRequest } from '../../src/core/tunnels/tunnel-request.js';

const RUNS = { numRuns: 300, seed: 20_241_128 };

/** Throws unless `run` returns or throws an error of `kind`. */
function onlyDomainErrors(run: () => unknown, kind: abstract new (...args: never[]) => Error): void {
  try {
    run();
  } catch (err) {
    if (!(err instanceof kind)) throw new Error(`threw ${String(err)} instead of a ${kind.name}`);
  }
}

// ---- client groups ----------------------------------------------------------------------------------------

/** Small alphabets make matches likely; the Greek and dotted letters have irregular case mappings. */
const letter = fc.constantFrom('a', 'B', 'c', '-', '.', 'Σ', 'σ', 'ς', 'İ', 'é', '1');
const word = fc.string({ unit: letter, minLength: 1, maxLength: 4 });
const pattern = fc.oneof(
  word,
  word.map((w) => `${w}*`),
  word.map((w) => `*${w}`),
  fc.constant('*'),
);

function record(name: string, tags: string[], os: string): ClientRecord {
  return connectedRecord(
    {
      client_id: 'c1',
      name,
      session_id: 's',
      version: '1.0.0',
      tags,
      labels: {},
      facts: { ...TEST_FACTS, os },
    },
    { id: 'c1', clientAuthId: 'a', address: '192.0.2.1:1', connectedAt: new Date(0) },
  );
}
const client = fc
  .tuple(word, fc.array(word, { maxLength: 3 }), word)
  .map(([name, tags, os]) => record(name, tags, os));

type Param = string[] | { and: string[] } | { or: string[] };
const paramValue: fc.Arbitrary<Param> = fc.oneof(
  fc.array(pattern, { minLength: 1, maxLength: 3 }),
  fc.array(pattern, { minLength: 1, maxLength: 3 }).map((and) => ({ and })),
  fc.array(pattern, { minLength: 1, maxLength: 3 }).map((or) => ({ or })),
);
const params = (given: Partial<Record<'name' | 'tag' | 'os', Param>>): ClientGroupParams => ({
  ...EMPTY_CLIENT_GROUP_PARAMS,
  ...given,
});
const someParams = fc.record({ name: paramValue, tag: paramValue, os: paramValue }, { requiredKeys: [] });

describe('client-group rules (properties)', () => {
  test('any JSON is either valid params or a validation error; valid params parse to themselves', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (json) => {
        const parsed = clientGroupParamsSchema.safeParse(json);
        if (parsed.success) expect(clientGroupParamsSchema.parse(parsed.data)).toEqual(parsed.data);
      }),
      RUNS,
    );
  });

  test('a client is in the group of its own name, in any case, and `*` takes every client', () => {
    fc.assert(
      fc.property(client, (c) => {
        expect(isMember(params({ name: [c.name] }), c)).toBe(true);
        expect(isMember(params({ name: [c.name.toUpperCase()] }), c)).toBe(true);
        expect(isMember(params({ name: [c.name.toLowerCase()] }), c)).toBe(true);
        expect(isMember(params({ name: ['*'] }), c)).toBe(true);
      }),
      RUNS,
    );
  });

  test('one pattern means the same as a list, {and} and {or}; a further param never adds a member', () => {
    fc.assert(
      fc.property(client, pattern, someParams, someParams, (c, p, base, extra) => {
        const single = isMember(params({ tag: [p] }), c);
        expect(isMember(params({ tag: { and: [p] } }), c)).toBe(single);
        expect(isMember(params({ tag: { or: [p] } }), c)).toBe(single);
        if (isMember(params({ ...base, ...extra }), c) && Object.keys(base).length > 0) {
          // Every param of the combined group holds; those of `base` that `extra` did not replace among them.
          const kept = Object.fromEntries(Object.entries(base).filter(([key]) => !(key in extra)));
          if (Object.keys(kept).length > 0) expect(isMember(params(kept), c)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  test('{and: [p, q]} holds exactly when both [p] and [q] hold', () => {
    fc.assert(
      fc.property(client, pattern, pattern, (c, p, q) => {
        const both = isMember(params({ tag: [p] }), c) && isMember(params({ tag: [q] }), c);
        expect(isMember(params({ tag: { and: [p, q] } }), c)).toBe(both);
        const either = isMember(params({ tag: [p] }), c) || isMember(params({ tag: [q] }), c);
        expect(isMember(params({ tag: [p, q] }), c)).toBe(either);
      }),
      RUNS,
    );
  });
});

// ---- tunnel requests --------------------------------------------------------------------------------------

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
const port = fc.integer({ min: 1, max: 65_535 });
const hostname = fc
  .array(fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/), { minLength: 1, maxLength: 3 })
  .map((labels) => labels.join('.'));
const host = fc.oneof(
  ipv4,
  hostname,
  fc.ipV6().map((ip) => `[${ip}]`),
);
const queryValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    '0',
    '-1',
    '65536',
    '1e3',
    ':22',
    '[::1]',
    '[::1]:22',
    'a:b:c',
    '1d1h',
    '31d',
    '32d',
    'true',
  ),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
);
const tunnelKey = fc.oneof(
  fc.constantFrom('remote', 'local', 'acl', 'idle-timeout-minutes', 'skip-idle-timeout', 'auto-close'),
  fc.constantFrom('check_port', 'scheme'),
  fc.string({ maxLength: 8 }),
);

describe('tunnel requests (properties)', () => {
  test('any query is a request or a 400 listing problems, never another error', () => {
    fc.assert(
      fc.property(fc.dictionary(tunnelKey, queryValue, { maxKeys: 5 }), (query) => {
        onlyDomainErrors(() => parseTunnelRequest(query), AppError);
      }),
      RUNS,
    );
  });

  test('a request written as a client writes it reads back as given', () => {
    fc.assert(
      fc.property(
        host,
        port,
        fc.option(fc.tuple(ipv4, port)),
        fc.integer({ min: 0, max: 7 * 24 * 60 }),
        fc.option(fc.stringMatching(/^[a-z]{1,15}$/)),
        (remoteHost, remotePort, local, idle, scheme) => {
          const query: Record<string, string> = {
            remote: `${remoteHost}:${remotePort}`,
            'idle-timeout-minutes': String(idle),
            ...(local ? { local: `${local[0]}:${local[1]}` } : {}),
            ...(scheme ? { scheme } : {}),
          };
          const request = parseTunnelRequest(query);
          expect(request.remote).toEqual({ host: remoteHost.replace(/^\[|\]$/g, ''), port: remotePort });
          expect(request.local).toEqual(local ? { host: local[0], port: local[1] } : undefined);
          expect(request.idleTimeoutMinutes).toBe(idle);
          if (scheme) expect(request.scheme).toBe(scheme);
        },
      ),
      RUNS,
    );
  });

  test('durations: days, hours, minutes, seconds and milliseconds add up', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1000), { minLength: 5, maxLength: 5 }), ([d, h, m, s, ms]) => {
        const text = `${d}d${h}h${m}m${s}s${ms}ms`;
        expect(parseDurationMs(text)).toBe(
          (d ?? 0) * 86_400_000 + (h ?? 0) * 3_600_000 + (m ?? 0) * 60_000 + (s ?? 0) * 1000 + (ms ?? 0),
        );
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const ms = parseDurationMs(text);
        if (ms !== undefined) expect(Number.isSafeInteger(ms) && ms >= 0).toBe(true);
      }),
      RUNS,
    );
  });

  test('an ACL allows every address it lists and every address of a listed /24', () => {
    fc.assert(
      fc.property(fc.array(ipv4, { minLength: 1, maxLength: 4 }), fc.nat(255), (addresses, last) => {
        const listed = addresses.filter((a) => a !== '0.0.0.0');
        fc.pre(listed.length > 0);
        const acl = parseAcl(listed.join(','));
        for (const address of listed) expect(aclAllows(acl, address)).toBe(true);
        const [first] = listed;
        const subnet = parseAcl(`${first}/24`);
        const sibling = `${first?.split('.').slice(0, 3).join('.')}.${last}`;
        expect(aclAllows(subnet, sibling)).toBe(true);
        expect(aclAllows(subnet, `::ffff:${sibling}`)).toBe(true);
      }),
      RUNS,
    );
  });
});

// ---- configuration ----------------------------------------------------------------------------------------

type JsonSchemaObject = { properties?: Record<string, JsonSchemaObject> };
const configShape = z.toJSONSchema(svcdConfigSchema, {
  io: 'input',
  unrepresentable: 'any',
}) as JsonSchemaObject;
const SECTIONS = Object.keys(configShape.properties ?? {});
const keysOf = (section: string) => Object.keys(configShape.properties?.[section]?.properties ?? {});

const tomlValue = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constantFrom('10s', '1h', '0', '-1s', '127.0.0.1:0', 'sqlite', 'debug', '/nonexistent/x', 'a:b'),
  fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }),
);
const section = fc.oneof(fc.constantFrom(...SECTIONS), fc.string({ minLength: 1, maxLength: 8 }));
const configData = fc.dictionary(
  section,
  section.chain((name) =>
    fc.dictionary(
      fc.oneof(
        keysOf(name).length > 0 ? fc.constantFrom(...keysOf(name)) : fc.string(),
        fc.string({ maxLength: 8 }),
      ),
      tomlValue,
      { maxKeys: 4 },
    ),
  ),
  { maxKeys: 4 },
);

/** Where a problem line says the problem is: a `[section] key`, a top-level key, or a line of the file. */
const KEY = String.raw`(?:[\w-]+|"(?:[^"\\]|\\.)*")`;
const NAMES_A_PLACE = new RegExp(
  String.raw`^(\[${KEY}\]|line \d+, column \d+:|${KEY}: unknown key outside any section)`,
);

describe('configuration loader (properties)', () => {
  test('any TOML document gives a config or a ConfigError whose every problem names its key', () => {
    expect(SECTIONS).toEqual(expect.arrayContaining(['server', 'api', 'database', 'logging']));
    fc.assert(
      fc.property(configData, (data) => {
        try {
          const config = parseSvcdConfig(stringify(data));
          expect(config.server.address).toBeTypeOf('string');
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          expect(err.problems.length).toBeGreaterThan(0);
          for (const problem of err.problems) expect(problem).toMatch(NAMES_A_PLACE);
        }
      }),
      RUNS,
    );
  });

  test('found by the property: a section or key that is no bare TOML key is quoted in its problem', () => {
    const problems = (text: string) => {
      try {
        parseSvcdConfig(text);
      } catch (err) {
        return (err as ConfigError).problems;
      }
      return [];
    };
    expect(problems('["] "]\n')).toEqual([expect.stringMatching(/^\["\] "\]: unknown section/)]);
    expect(problems('[server]\n"a b" = 1\n')).toEqual([
      expect.stringMatching(/^\[server\] "a b": unknown key/),
    ]);
  });

  test('any text at all gives a config or a ConfigError, never another error', () => {
    const tomlish = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc
        .array(
          fc.constantFrom(
            '[server]',
            '[api]',
            'address = ',
            '"x"',
            '=',
            '[[a]]',
            '\n',
            '{',
            '}',
            '1e9',
            'true',
          ),
          {
            maxLength: 12,
          },
        )
        .map((parts) => parts.join(' ')),
    );
    fc.assert(
      fc.property(tomlish, (text) => {
        onlyDomainErrors(() => parseSvcdConfig(text), ConfigError);
      }),
      RUNS,
    );
  });
});
