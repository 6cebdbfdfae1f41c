import { describe, expect, test } from 'vitest';
import { compileFilter, defaultExecSettings, type CommandFilters } from '../src/exec/exec-settings.js';
import { checkCommandLine } from '../src/exec/filters.js';

const DEFAULTS = defaultExecSettings().filters;
const filters = (allow: string[], deny: string[], order: CommandFilters['order']): CommandFilters => ({
  allow: allow.map(compileFilter),
  deny: deny.map(compileFilter),
  order,
});

describe('the default filters let single commands under the allowed folders through', () => {
  test.each([
    '/usr/bin/echo hello',
    '/usr/local/bin/tool --flag=value',
    'C:\\Windows\\System32\\ipconfig.exe /all',
    '/usr/bin/sh /var/lib/svc/scripts/7f1c5a1e-1111-4222-8333-444455556666',
  ])('%j is allowed', (line) => {
    expect(checkCommandLine(line, DEFAULTS)).toEqual({ allowed: true });
  });

  test.each([
    ['pipe', '/usr/bin/cat /etc/passwd | /usr/bin/nc x 1'],
    ['semicolon', '/usr/bin/echo a; /usr/bin/rm -rf /'],
    ['output redirection', '/usr/bin/echo a > /etc/motd'],
    ['input redirection', '/usr/bin/wc -l < /etc/passwd'],
    ['ampersand', '/usr/bin/sleep 100 &'],
    ['double ampersand', '/usr/bin/true && /usr/bin/id'],
    ['comma', '/usr/bin/echo a,b'],
    ['newline', '/usr/bin/echo a\n/usr/bin/id'],
  ])("a %s is denied by the spec's expression", (_name, line) => {
    expect(checkCommandLine(line, DEFAULTS)).toEqual({
      allowed: false,
      filter: 'deny',
      detail: 'matches (\\||<|>|;|,|\\n|&)',
    });
  });

  test.each([
    ['command substitution', '/usr/bin/echo $(/usr/bin/id -un)'],
    ['command substitution in a parameter default', '/usr/bin/echo ${x:-$(/usr/bin/id)}'],
    ['backticks', '/usr/bin/echo `/usr/bin/hostname`'],
    ['arithmetic with a subscript bash evaluates', '/usr/bin/echo $((a[0]))'],
    ['subshell', '/usr/bin/true (/usr/bin/id)'],
    ["fish's command substitution", '/usr/bin/echo (id)'],
    ["zsh's glob qualifier that runs code", "/usr/bin/ls *(e:'id':)"],
    ["PowerShell's grouping", 'C:\\Windows\\System32\\whoami.exe (Remove-Item x)'],
    ["PowerShell's array subexpression", 'C:\\Windows\\System32\\whoami.exe @(Get-Date)'],
    ['carriage return', '/usr/bin/true\r/usr/bin/id'],
  ])('%s is denied by the added expression', (_name, line) => {
    expect(checkCommandLine(line, DEFAULTS)).toEqual({
      allowed: false,
      filter: 'deny',
      detail: 'matches (`|\\(|\\r)',
    });
  });

  test.each([
    '/usr/bin/echo $HOME ${USER} ~ * "quoted words" \'single\' a\\ b',
    '/usr/bin/echo ) ] } #comment',
  ])('expansions that run nothing still pass: %j', (line) => {
    expect(checkCommandLine(line, DEFAULTS)).toEqual({ allowed: true });
  });

  test.each([
    'rm -rf /',
    '/bin/ls',
    '/usr/sbin/reboot',
    'echo /usr/bin/x',
    '/home/user/usr/bin/x',
    'D:\\Windows\\System32\\cmd.exe',
  ])('%j outside the allowed folders is denied by allow', (line) => {
    expect(checkCommandLine(line, DEFAULTS)).toEqual({
      allowed: false,
      filter: 'allow',
      detail: 'matches none of ^/usr/bin/.*, ^/usr/local/bin/.*, ^C:\\\\Windows\\\\System32\\\\.*',
    });
  });
});

describe('order allow, deny: an allow must match, then any deny refuses; neither refuses', () => {
  const f = filters(['^/usr/bin/', '^echo '], ['rm', 'shutdown'], ['allow', 'deny']);
  test.each([
    ['allow only', '/usr/bin/ls', true],
    ['second allow only', 'echo hi', true],
    ['allow and deny', '/usr/bin/rm x', false],
    ['deny only', 'rm x', false],
    ['neither', 'ls', false],
  ])('%s: %j → allowed %s', (_name, line, allowed) => {
    expect(checkCommandLine(line, f).allowed).toBe(allowed);
  });

  test('the refusal names the list that decided', () => {
    expect(checkCommandLine('/usr/bin/rm x', f)).toMatchObject({ filter: 'deny', detail: 'matches rm' });
    expect(checkCommandLine('rm x', f)).toMatchObject({ filter: 'allow' });
  });

  test('an empty allow list refuses everything', () => {
    expect(checkCommandLine('/usr/bin/ls', filters([], [], ['allow', 'deny']))).toEqual({
      allowed: false,
      filter: 'allow',
      detail: 'matches none of (the list is empty)',
    });
  });
});

describe('order deny, allow: a deny refuses unless an allow matches too; neither is permitted', () => {
  const f = filters(['^/usr/bin/', '^echo '], ['rm', 'shutdown'], ['deny', 'allow']);
  test.each([
    ['allow only', '/usr/bin/ls', true],
    ['allow and deny', '/usr/bin/rm x', true],
    ['deny only', 'rm x', false],
    ['second deny only', '/sbin/shutdown now', false],
    ['neither', 'ls', true],
  ])('%s: %j → allowed %s', (_name, line, allowed) => {
    expect(checkCommandLine(line, f).allowed).toBe(allowed);
  });

  test('the refusal names the deny expression', () => {
    expect(checkCommandLine('rm x', f)).toEqual({
      allowed: false,
      filter: 'deny',
      detail: 'matches rm and no allow expression',
    });
  });

  test('empty lists permit everything', () => {
    expect(checkCommandLine('anything; at all', filters([], [], ['deny', 'allow']))).toEqual({
      allowed: true,
    });
  });
});

describe("other spellings of the command line (a script interpreter's resolved path)", () => {
  const script = '/bin/sh /var/lib/svc/scripts/7f1c5a1e-1111-4222-8333-444455556666';
  const resolved = '/usr/bin/dash /var/lib/svc/scripts/7f1c5a1e-1111-4222-8333-444455556666';

  test('an allow expression matching any spelling counts', () => {
    expect(checkCommandLine(script, DEFAULTS)).toMatchObject({ allowed: false, filter: 'allow' });
    expect(checkCommandLine(script, DEFAULTS, [resolved])).toEqual({ allowed: true });
  });

  test('a deny expression matching any spelling counts too', () => {
    const denyDash = filters(['.*'], ['^/usr/bin/dash '], ['allow', 'deny']);
    expect(checkCommandLine(script, denyDash, [resolved])).toEqual({
      allowed: false,
      filter: 'deny',
      detail: 'matches ^/usr/bin/dash ',
    });
    const denyFirst = filters(['^/bin/'], ['dash'], ['deny', 'allow']);
    expect(checkCommandLine(script, denyFirst, [resolved])).toEqual({ allowed: true });
    expect(checkCommandLine(resolved, denyFirst)).toMatchObject({ allowed: false, filter: 'deny' });
  });
});

test('expressions are unanchored unless they anchor themselves', () => {
  const f = filters(['bin/ls'], [], ['allow', 'deny']);
  expect(checkCommandLine('/usr/bin/ls', f).allowed).toBe(true);
  expect(checkCommandLine('/opt/bin/ls -l', f).allowed).toBe(true);
});
