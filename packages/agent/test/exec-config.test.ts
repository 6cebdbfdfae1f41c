import { describe, expect, test } from 'vitest';
import { ConfigError, parseTomlConfig } from '@svc/platform';
import { agentConfigSchema } from '../src/config/schema.js';
import { resolveSettings } from '../src/config/settings.js';
import { DEFAULT_ALLOW, DEFAULT_DENY, defaultExecSettings } from '../src/exec/exec-settings.js';

const parseConfig = (text: string) => parseTomlConfig(text, agentConfigSchema, { source: 'svc.conf' });

const execOf = (toml: string) =>
  resolveSettings({
    flags: { auth: 'c:p' },
    serverArg: 'svcd:8080',
    cwd: '/work',
    hostname: 'h',
    file: { config: parseConfig(toml), path: 'svc.conf' },
  }).exec;

function problemsOf(toml: string): string {
  try {
    parseConfig(toml);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a config error');
}

describe('[remote-commands], [remote-scripts], [interpreter-aliases]', () => {
  test('without the sections: both enabled, the spec defaults, no aliases', () => {
    const exec = execOf('');
    expect(exec).toEqual(defaultExecSettings());
    expect(exec.commandsEnabled).toBe(true);
    expect(exec.scriptsEnabled).toBe(true);
    expect(exec.filters.allow.map((p) => p.text)).toEqual(DEFAULT_ALLOW);
    expect(exec.filters.deny.map((p) => p.text)).toEqual(DEFAULT_DENY);
    expect(exec.filters.order).toEqual(['allow', 'deny']);
    expect(exec.sendBackLimit).toBe(4_194_304);
    expect(exec.interpreterAliases).toEqual({});
  });

  test('the default Windows allow entry matches a System32 path written with backslashes', () => {
    const windows = defaultExecSettings().filters.allow[2]?.regex;
    expect(windows?.test('C:\\Windows\\System32\\ipconfig.exe')).toBe(true);
    expect(windows?.test('C:\\Windows\\Temp\\x.exe')).toBe(false);
  });

  test('every key is read', () => {
    const exec = execOf(`
[remote-commands]
enabled = false
allow = ['^/opt/tools/', '^echo ']
deny = ['rm']
order = ["deny", "allow"]
send_back_limit = 1024
[remote-scripts]
enabled = false
[interpreter-aliases]
bash = "/usr/bin/bash"
py = ["/usr/bin/python3", "utf-8", "utf-8"]
`);
    expect(exec).toEqual({
      commandsEnabled: false,
      scriptsEnabled: false,
      filters: {
        allow: [
          { text: '^/opt/tools/', regex: /^\/opt\/tools\// },
          { text: '^echo ', regex: /^echo / },
        ],
        deny: [{ text: 'rm', regex: /rm/ }],
        order: ['deny', 'allow'],
      },
      sendBackLimit: 1024,
      interpreterAliases: { bash: '/usr/bin/bash', py: '/usr/bin/python3' },
    });
  });

  test('empty lists stay empty', () => {
    const exec = execOf('[remote-commands]\nallow = []\ndeny = []');
    expect(exec.filters.allow).toEqual([]);
    expect(exec.filters.deny).toEqual([]);
  });

  test.each([
    [
      '[remote-commands]\nallow = ["(unclosed"]',
      /\[remote-commands\] allow\[0\]: invalid regular expression "\(unclosed"/,
    ],
    [
      '[remote-commands]\ndeny = ["ok", "[z-a]"]',
      /\[remote-commands\] deny\[1\]: invalid regular expression "\[z-a\]"/,
    ],
    ['[remote-commands]\nallow = "^/usr/bin/"', /\[remote-commands\] allow: expected a list/],
    [
      '[remote-commands]\norder = ["allow"]',
      /\[remote-commands\] order: must be \["allow", "deny"\] or \["deny", "allow"\]/,
    ],
    ['[remote-commands]\norder = ["allow", "allow"]', /\[remote-commands\] order: must be/],
    ['[remote-commands]\norder = "allow,deny"', /\[remote-commands\] order: expected a list/],
    ['[remote-commands]\nsend_back_limit = -1', /\[remote-commands\] send_back_limit: must be at least 0/],
    ['[remote-commands]\nsend_back_limit = 1.5', /\[remote-commands\] send_back_limit: expected an integer/],
    ['[remote-commands]\nsend_back_limit = "4M"', /\[remote-commands\] send_back_limit: expected an integer/],
    [
      '[remote-commands]\nsend_back_limit = 1073741824',
      /\[remote-commands\] send_back_limit: must be at most 67108864/,
    ],
    ['[remote-commands]\nenabled = "yes"', /\[remote-commands\] enabled: expected a boolean/],
    ['[remote-commands]\nallowed = []', /\[remote-commands\] allowed: unknown key/],
    ['[remote-scripts]\nenabled = 1', /\[remote-scripts\] enabled: expected a boolean/],
    ['[remote-scripts]\nallow = []', /\[remote-scripts\] allow: unknown key/],
    ['[interpreter-aliases]\nbash = ""', /\[interpreter-aliases\] bash: must not be empty/],
    ['[interpreter-aliases]\nbash = 5', /\[interpreter-aliases\] bash: has an unsupported form, got number/],
  ])('%j is refused with the key named', (toml, message) => {
    expect(problemsOf(toml)).toMatch(message);
  });

  test('every problem is reported at once', () => {
    const message = problemsOf(
      '[remote-commands]\nallow = ["("]\nsend_back_limit = -1\n[remote-scripts]\nenabled = 2',
    );
    expect(message).toMatch(/3 problems/);
  });
});
