import { CommanderError } from 'commander';
import { expect, test } from 'vitest';
import { buildProgram, type CommandLine } from '../src/cli/program.js';
import { SVC_VERSION } from '../src/version.js';

/** Parses argv like the real `svc`, capturing output instead of printing or exiting. */
async function parse(...args: string[]): Promise<{ commandLine?: CommandLine; out: string; err: string }> {
  let commandLine: CommandLine | undefined;
  let out = '';
  let err = '';
  const program = buildProgram((parsed) => {
    commandLine = parsed;
    return Promise.resolve();
  })
    .exitOverride()
    .configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (err += s) });
  try {
    await program.parseAsync(['node', 'svc', ...args]);
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return { out, err: err || error.message };
  }
  return { commandLine, out, err };
}

test('collects every flag and the server argument', async () => {
  const { commandLine } = await parse(
    '--auth=client1:pw',
    '--id',
    'web-01',
    '--name',
    'Web 1',
    '--tag',
    'a',
    '-t',
    'b',
    '--label',
    'env:prod',
    '-l',
    'team:ops',
    '--fingerprint',
    '5d:b3',
    '--data-dir',
    '/tmp/x',
    '-c',
    'svc.conf',
    '--log-level',
    'debug',
    'http://svcd:8080',
  );
  expect(commandLine).toEqual({
    serverArg: 'http://svcd:8080',
    flags: {
      auth: 'client1:pw',
      id: 'web-01',
      name: 'Web 1',
      tag: ['a', 'b'],
      label: ['env:prod', 'team:ops'],
      fingerprint: '5d:b3',
      dataDir: '/tmp/x',
      config: 'svc.conf',
      logLevel: 'debug',
    },
  });
});

test('the server argument is optional (it may come from the config file)', async () => {
  const { commandLine } = await parse('-c', 'svc.conf');
  expect(commandLine).toEqual({ serverArg: undefined, flags: { config: 'svc.conf' } });
});

test('--help explains every flag', async () => {
  const { out } = await parse('--help');
  for (const flag of [
    '--auth',
    '--id',
    '--name',
    '--tag',
    '--label',
    '--fingerprint',
    '--data-dir',
    '--config',
    '--log-level',
    '--version',
    'SVC_AUTH',
    'server-url',
  ])
    expect(out).toContain(flag);
});

test('--version prints the version', async () => {
  expect((await parse('--version')).out.trim()).toBe(SVC_VERSION);
});

test('an unknown log level or flag is refused', async () => {
  expect((await parse('--log-level', 'loud', 'h:1')).err).toMatch(
    /Allowed choices are error, warn, info, debug/,
  );
  expect((await parse('--bogus', 'h:1')).err).toMatch(/unknown option '--bogus'/);
  expect((await parse('h:1', 'extra')).err).toMatch(/too many arguments/);
});
