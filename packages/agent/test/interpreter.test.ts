import { chmod, mkdir, mkdtemp, realpath, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findOnPath, isExecutableFile } from '../src/exec/find-executable.js';
import {
  interpreterKind,
  resolveInterpreter,
  shebangOf,
  type InterpreterHost,
} from '../src/exec/interpreter.js';
import {
  commandInvocation,
  commandLineText,
  scriptExtension,
  scriptInvocation,
  withSudo,
} from '../src/exec/invocation.js';
import { machineInterpreterHost, pathLookup, rememberedLookup } from '../src/exec/machine.js';

let root: string;
/** Real folder with programs; `linked` is a symlink to it, as /bin is to /usr/bin on merged-/usr systems. */
let bin: string;
let linked: string;
let winBin: string;

async function program(dir: string, name: string, mode = 0o755): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, '#!/bin/sh\nexit 0\n');
  await chmod(path, mode);
  return path;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-interp-'));
  bin = join(root, 'usr-bin');
  winBin = join(root, 'System32');
  await mkdir(bin);
  await mkdir(winBin);
  linked = join(root, 'bin');
  await symlink(bin, linked);
  await program(bin, 'sh');
  await program(bin, 'bash');
  await program(bin, 'tacoscript');
  await program(bin, 'notes.txt', 0o644);
  await program(winBin, 'cmd.exe');
  await program(winBin, 'powershell.exe');
});
afterAll(() => rm(root, { recursive: true, force: true }));

const host = (overrides: Partial<InterpreterHost> = {}): InterpreterHost => ({
  platform: 'linux',
  aliases: {},
  find: pathLookup(linked, 'linux'),
  isExecutable: isExecutableFile,
  realPath: (path) => realpath(path).catch(() => path),
  ...overrides,
});

describe('PATH lookup', () => {
  test('finds executables only, in PATH order, and canonicalises the folder but not the name', async () => {
    expect(await findOnPath('sh', `relative/dir:${linked}:/usr/bin`)).toBe(join(bin, 'sh'));
    expect(await findOnPath('notes.txt', linked)).toBeUndefined();
    expect(await findOnPath('nope', linked)).toBeUndefined();
    expect(await findOnPath('sh', undefined)).toBeUndefined();
  });

  test('on Windows tries PATHEXT extensions', async () => {
    const find = pathLookup(winBin, 'win32', '.com;.exe'); // Windows matches names in any case; this file system does not;
    expect(await find('powershell')).toBe(join(winBin, 'powershell.exe'));
    expect(await find('cmd.exe')).toBe(join(winBin, 'cmd.exe'));
  });

  test('a remembered program is trusted a second, then checked; once gone or too old, PATH is searched again', async () => {
    const first = join(root, 'first');
    const second = join(root, 'second');
    await mkdir(first);
    await mkdir(second);
    await program(second, 'tool');
    const searches: string[] = [];
    const checks: string[] = [];
    const search = pathLookup(`${first}:${second}`, 'linux');
    let clock = 0;
    const find = rememberedLookup(
      (name) => (searches.push(name), search(name)),
      (path) => (checks.push(path), isExecutableFile(path)),
      10_000,
      () => clock,
    );
    expect(await find('tool')).toBe(join(second, 'tool'));
    clock = 999;
    expect(await find('tool')).toBe(join(second, 'tool'));
    expect(checks).toEqual([]);
    clock = 1_000;
    expect(await find('tool')).toBe(join(second, 'tool'));
    expect(checks).toEqual([join(second, 'tool')]);
    expect(searches).toEqual(['tool']);
    // Installed earlier on PATH: found once the remembered answer is older than the TTL.
    await program(first, 'tool');
    clock = 9_999;
    expect(await find('tool')).toBe(join(second, 'tool'));
    clock = 10_000;
    expect(await find('tool')).toBe(join(first, 'tool'));
    // Gone: searched again at its next check.
    await unlink(join(first, 'tool'));
    clock = 11_000;
    expect(await find('tool')).toBe(join(second, 'tool'));
    await unlink(join(second, 'tool'));
    clock = 12_000;
    expect(await find('tool')).toBeUndefined();
    expect(await find('tool')).toBeUndefined();
    expect(searches).toEqual(['tool', 'tool', 'tool', 'tool', 'tool']);
  });

  test("this machine's default sh resolves to an absolute path the default allow list accepts", async () => {
    const resolved = await resolveInterpreter('', machineInterpreterHost({}));
    expect(resolved.path).toMatch(/^\/usr\/bin\/sh$|^\/usr\/local\/bin\/sh$/);
  });
});

describe('resolveInterpreter', () => {
  test('the default is sh from PATH, as an absolute path', async () => {
    expect(await resolveInterpreter('', host())).toEqual({ path: join(bin, 'sh'), kind: 'posix', args: [] });
  });

  test('a name is looked up on PATH', async () => {
    expect(await resolveInterpreter('bash', host())).toMatchObject({
      path: join(bin, 'bash'),
      kind: 'posix',
    });
  });

  test('an alias is replaced by its value, which may be a name or an absolute path', async () => {
    const aliases = { shell: 'bash', abs: join(bin, 'bash') };
    expect((await resolveInterpreter('shell', host({ aliases }))).path).toBe(join(bin, 'bash'));
    expect((await resolveInterpreter('abs', host({ aliases }))).path).toBe(join(bin, 'bash'));
  });

  test('an alias does not resolve through the object prototype', async () => {
    await expect(resolveInterpreter('constructor', host())).rejects.toThrow(/"constructor" is not an alias/);
  });

  test('an absolute path is used as given when it is executable', async () => {
    const path = join(linked, 'bash');
    expect(await resolveInterpreter(path, host())).toEqual({ path, kind: 'posix', args: [] });
  });

  test('tacoscript is found on PATH and takes files only', async () => {
    const taco = await resolveInterpreter('tacoscript', host());
    expect(taco).toMatchObject({ path: join(bin, 'tacoscript'), kind: 'tacoscript' });
    expect(() => commandInvocation(taco, 'x')).toThrow(/tacoscript runs task files only/);
  });

  test.each([
    ['tacoscript', 'tacoscript is not installed', host({ find: pathLookup('/nonexistent', 'linux') })],
    ['python9', '"python9" is not an alias in [interpreter-aliases] and no program of that name', host()],
    [
      '/no/such/interpreter',
      'interpreter /no/such/interpreter does not exist or is not an executable file',
      host(),
    ],
    ['bin/sh', '"bin/sh" must be an absolute path, a program name on PATH or an alias', host()],
    ['', "the default interpreter sh is not on this client's PATH", host({ find: pathLookup('', 'linux') })],
  ])('%j fails clearly', async (requested, message, h) => {
    await expect(resolveInterpreter(requested, h)).rejects.toMatchObject({ code: 'failed' });
    await expect(resolveInterpreter(requested, h)).rejects.toThrow(message);
  });

  test('a non-executable file is refused, and an alias is named in the error', async () => {
    const aliases = { notes: join(bin, 'notes.txt') };
    await expect(resolveInterpreter('notes', host({ aliases }))).rejects.toThrow(
      /notes\.txt \(alias "notes" in \[interpreter-aliases\]\) does not exist or is not an executable file/,
    );
  });

  test('on Windows: cmd.exe by default, powershell by name', async () => {
    const win = host({ platform: 'win32', find: pathLookup(winBin, 'win32', '.exe') });
    expect(await resolveInterpreter('', win)).toMatchObject({ path: join(winBin, 'cmd.exe'), kind: 'cmd' });
    expect(await resolveInterpreter('powershell', win)).toMatchObject({
      path: join(winBin, 'powershell.exe'),
      kind: 'powershell',
    });
  });
});

describe('interpreterKind', () => {
  test.each([
    ['/usr/bin/sh', 'linux', 'posix'],
    ['/usr/bin/powershell', 'linux', 'posix'],
    ['/usr/local/bin/tacoscript', 'linux', 'tacoscript'],
    ['C:\\Windows\\System32\\cmd.exe', 'win32', 'cmd'],
    ['C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\PowerShell.exe', 'win32', 'powershell'],
    ['C:\\Tools\\my-powershell-wrapper.exe', 'win32', 'powershell'],
    ['C:\\Tools\\tacoscript.exe', 'win32', 'tacoscript'],
    ['C:\\Python\\python.exe', 'win32', 'posix'],
  ] as const)('%s on %s → %s', (path, platform, kind) => {
    expect(interpreterKind(path, platform)).toBe(kind);
  });
});

describe('invocations: an argv array, never a shell string of ours', () => {
  const sh = { path: '/usr/bin/sh', kind: 'posix', args: [] } as const;
  const cmd = { path: 'C:\\Windows\\System32\\cmd.exe', kind: 'cmd', args: [] } as const;
  const ps = { path: 'C:\\PS\\powershell.exe', kind: 'powershell', args: [] } as const;
  const taco = { path: '/usr/bin/tacoscript', kind: 'tacoscript', args: [] } as const;

  test('a command is the one argument after -c', () => {
    const command = '/usr/bin/echo "a b" $HOME';
    expect(commandInvocation(sh, command)).toEqual({
      file: '/usr/bin/sh',
      args: ['-c', command],
      windowsVerbatimArguments: false,
    });
  });

  test('cmd.exe gets /d /s /c "<command>" verbatim; PowerShell gets its flags and -Command', () => {
    expect(commandInvocation(cmd, 'dir C:\\')).toEqual({
      file: cmd.path,
      args: ['/d', '/s', '/c', '"dir C:\\"'],
      windowsVerbatimArguments: true,
    });
    expect(commandInvocation(ps, 'Get-Date').args).toEqual([
      '-Noninteractive',
      '-executionpolicy',
      'bypass',
      '-Command',
      'Get-Date',
    ]);
  });

  test('a script is <interpreter> <file>; PowerShell adds -Noninteractive -executionpolicy bypass -File', () => {
    expect(scriptInvocation(sh, '/d/scripts/x').args).toEqual(['/d/scripts/x']);
    expect(scriptInvocation(taco, '/d/scripts/x.yml').args).toEqual(['/d/scripts/x.yml']);
    expect(scriptInvocation(cmd, 'C:\\d\\x.bat').args).toEqual(['/d', '/c', 'C:\\d\\x.bat']);
    expect(scriptInvocation(ps, 'C:\\d\\x.ps1').args).toEqual([
      '-Noninteractive',
      '-executionpolicy',
      'bypass',
      '-File',
      'C:\\d\\x.ps1',
    ]);
    expect(scriptInvocation({ ...sh, path: '/usr/bin/env', args: ['python3'] }, '/d/x').args).toEqual([
      'python3',
      '/d/x',
    ]);
  });

  test('script extensions follow the interpreter', () => {
    expect([scriptExtension('posix'), scriptExtension('cmd'), scriptExtension('powershell')]).toEqual([
      '',
      '.bat',
      '.ps1',
    ]);
    expect(scriptExtension('tacoscript')).toBe('.yml');
  });

  test('sudo -n goes in front; the filters see the command line without it', () => {
    const script = scriptInvocation(sh, '/d/scripts/x');
    expect(commandLineText(script)).toBe('/usr/bin/sh /d/scripts/x');
    expect(withSudo(script, '/usr/bin/sudo')).toEqual({
      file: '/usr/bin/sudo',
      args: ['-n', '/usr/bin/sh', '/d/scripts/x'],
      windowsVerbatimArguments: false,
    });
    // A job's env survives sudo's environment reset by name; values never reach the command line.
    expect(withSudo(script, '/usr/bin/sudo', ['DB_PASS', 'MODE']).args).toEqual([
      '-n',
      '--preserve-env=DB_PASS,MODE',
      '/usr/bin/sh',
      '/d/scripts/x',
    ]);
  });
});

describe('shebangOf', () => {
  test.each([
    ['#!/bin/bash\necho', { path: '/bin/bash', args: [] }],
    ['#! /usr/bin/env python3 \r\nprint(1)', { path: '/usr/bin/env', args: ['python3'] }],
    ['#!/usr/bin/perl -w -T\n', { path: '/usr/bin/perl', args: ['-w -T'] }],
    ['#!/bin/sh', { path: '/bin/sh', args: [] }],
    ['#!bash\n', undefined],
    ['#!\n', undefined],
    ['echo hi\n', undefined],
    ['', undefined],
  ])('%j', (text, expected) => {
    expect(shebangOf(Buffer.from(text))).toEqual(expected);
  });
});
