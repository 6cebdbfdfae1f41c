import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { prefault } from 'zod/mini';
import { ConfigError, durationSchema, formatZodIssues, loadTomlConfig, parseTomlConfig } from '@svc/platform';

const dir = mkdtempSync(join(tmpdir(), 'config-loader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schema = z.strictObject({
  api: z
    .strictObject({
      address: z.string().default(''),
      auth: z.string().optional(),
      max_failed_login: z.int().min(0).default(10),
      ban_time: prefault(durationSchema, '10m'),
    })
    .superRefine(
      (api, ctx) => {
        if (api.address && !api.auth) {
          ctx.addIssue({ code: 'custom', path: ['auth'], message: 'required when address is set' });
        }
      },
      // Run even when another key of the section is invalid, so all problems show at once.
      { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
    )
    .prefault({}),
  database: z
    .strictObject({
      db_type: z.enum(['sqlite', 'postgres', 'mysql']).default('sqlite'),
      db_password: z.string().default(''),
    })
    .prefault({}),
});

const options = { exampleFile: 'test.example.conf' };
let counter = 0;
function writeConfig(text: string): string {
  const file = join(dir, `config-${++counter}.toml`);
  writeFileSync(file, text);
  return file;
}

function problemsOf(text: string): string[] {
  try {
    parseTomlConfig(text, schema, options);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadTomlConfig', () => {
  test('loads a file and applies defaults', () => {
    const file = writeConfig('[api]\naddress = "127.0.0.1:3000"\nauth = "a:b"\nban_time = "1h"\n');
    expect(loadTomlConfig(file, schema, options)).toEqual({
      api: { address: '127.0.0.1:3000', auth: 'a:b', max_failed_login: 10, ban_time: 3_600_000 },
      database: { db_type: 'sqlite', db_password: '' },
    });
  });

  test('an empty file gives every default', () => {
    expect(loadTomlConfig(writeConfig(''), schema).api.ban_time).toBe(600_000);
  });

  test('a missing file is an error naming the path', () => {
    const file = join(dir, 'nope.toml');
    const error = (() => {
      try {
        loadTomlConfig(file, schema);
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.problems).toEqual([`cannot read config file ${file}: the file does not exist`]);
    expect(error?.message).toContain(file);
  });

  test('a directory is an error naming the path', () => {
    const sub = join(dir, 'a-directory');
    mkdirSync(sub);
    expect(() => loadTomlConfig(sub, schema)).toThrow(`cannot read config file ${sub}: it is a directory`);
  });

  test('messages name the file', () => {
    const file = writeConfig('[api]\nmax_failed_login = -1\n');
    expect(() => loadTomlConfig(file, schema)).toThrow(`Invalid configuration in ${file} (1 problem):`);
  });
});

describe('problems', () => {
  test('broken TOML reports line and column', () => {
    try {
      parseTomlConfig('[api]\naddress = "x"\nmax_failed_login = = 3\n', schema);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const { problems, message } = error as ConfigError;
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^line 3, column \d+: invalid TOML: /);
      expect(message).toContain('max_failed_login = = 3');
    }
  });

  test('unknown key, naming the section and the example file', () => {
    expect(problemsOf('[api]\nbogus = 1\n')).toEqual([
      '[api] bogus: unknown key (check the spelling; see test.example.conf)',
    ]);
  });

  test('unknown section', () => {
    expect(problemsOf('[apii]\naddress = "x"\n')).toEqual([
      '[apii]: unknown section (check the spelling; see test.example.conf)',
    ]);
  });

  test('key outside any section', () => {
    expect(problemsOf('address = "x"\n')).toEqual([
      'address: unknown key outside any section (move it under its [section]; check the spelling; see test.example.conf)',
    ]);
  });

  test('wrong type names the expected type and the value', () => {
    expect(problemsOf('[api]\nmax_failed_login = "ten"\n')).toEqual([
      '[api] max_failed_login: expected an integer, got string "ten"',
    ]);
    expect(problemsOf('[api]\nmax_failed_login = 2.5\n')).toEqual([
      '[api] max_failed_login: expected an integer, got number 2.5',
    ]);
    expect(problemsOf('[api]\nauth = "a"\naddress = 3000\n')).toEqual([
      '[api] address: expected a string, got number 3000',
    ]);
    expect(problemsOf('api = 1\n')).toEqual(['[api]: expected a table, got number 1']);
  });

  test('out of range and not one of the choices', () => {
    expect(problemsOf('[api]\nmax_failed_login = -1\n')).toEqual([
      '[api] max_failed_login: must be at least 0, got number -1',
    ]);
    expect(problemsOf('[database]\ndb_type = "oracle"\n')[0]).toMatch(
      /^\[database\] db_type: must be one of sqlite, postgres, mysql/,
    );
  });

  test('secrets are not echoed', () => {
    expect(problemsOf('[database]\ndb_password = 123456\n')).toEqual([
      '[database] db_password: expected a string, got number',
    ]);
  });

  test('every problem is reported at once, cross-field rules included', () => {
    const problems = problemsOf(
      '[api]\naddress = "h:1"\nmax_failed_login = "ten"\nban_time = "soon"\nbogus = 1\n[database]\ndb_type = "x"\n[extra]\n',
    );
    expect(problems).toEqual([
      '[api] max_failed_login: expected an integer, got string "ten"',
      expect.stringMatching(/^\[api\] ban_time: invalid duration "soon"/),
      '[api] bogus: unknown key (check the spelling; see test.example.conf)',
      '[api] auth: required when address is set',
      expect.stringMatching(/^\[database\] db_type: must be one of/),
      '[extra]: unknown section (check the spelling; see test.example.conf)',
    ]);
  });

  test('the message lists each problem on its own line', () => {
    try {
      parseTomlConfig('[api]\nmax_failed_login = "ten"\nbogus = 1\n', schema, options);
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message.split('\n')).toEqual([
        'Invalid configuration (2 problems):',
        '[api] max_failed_login: expected an integer, got string "ten"',
        '[api] bogus: unknown key (check the spelling; see test.example.conf)',
      ]);
    }
  });
});

test('formatZodIssues formats issues from any schema', () => {
  const result = z
    .strictObject({ a: z.strictObject({ list: z.array(z.string()) }) })
    .safeParse({ a: { list: ['x', 1] } });
  expect(formatZodIssues(result.error?.issues ?? [])).toEqual([
    '[a] list[1]: Invalid input: expected string, received number',
  ]);
});
