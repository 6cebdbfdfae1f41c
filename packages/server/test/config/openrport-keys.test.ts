import { describe, expect, test } from 'vitest';
import { OPENRPORT_KEYS } from '../../src/config/openrport-keys.js';
import { parseSvcdConfig, svcdConfigSchema } from '../../src/config/schema.js';

const sections = svcdConfigSchema.shape;

describe('a config written for OpenRPort', () => {
  test('keys svcd implements are not on the tolerated list, so the schema always checks them', () => {
    for (const [section, keys] of Object.entries(OPENRPORT_KEYS.keys)) {
      const known = Object.keys(sections[section as keyof typeof sections].unwrap().shape);
      expect(
        keys.filter((key) => known.includes(key)),
        `[${section}]`,
      ).toEqual([]);
    }
    expect(OPENRPORT_KEYS.sections.filter((name) => name in sections)).toEqual([]);
  });

  test('starts with one warning per OpenRPort key or section svcd does not implement', () => {
    const warnings: string[] = [];
    const config = parseSvcdConfig(
      [
        '[server]',
        'address = "0.0.0.0:8080"',
        'allow_root = false',
        'run_remote_cmd_timeout_sec = 60',
        '[api]',
        'address = "127.0.0.1:3000"',
        'auth = "admin:foobaz-secret"',
        'base_url = "https://rport.example.com"',
        '[monitoring]',
        'enabled = true',
        'data_storage_duration = "7d"',
      ].join('\n'),
      'rportd.conf',
      (message) => warnings.push(message),
    );
    expect(config.api.address).toBe('127.0.0.1:3000');
    expect(warnings).toEqual([
      '[server] allow_root: OpenRPort setting not implemented in this version; ignored',
      '[server] run_remote_cmd_timeout_sec: OpenRPort setting not implemented in this version; ignored',
      '[api] base_url: OpenRPort setting not implemented in this version; ignored',
      '[monitoring]: OpenRPort setting not implemented in this version; ignored',
    ]);
  });

  test('keys nobody knows stay errors, next to the tolerated ones', () => {
    const warnings: string[] = [];
    expect(() =>
      parseSvcdConfig(
        '[server]\nallow_root = true\nallow_rooot = true\n[monitorin]\nenabled = true\n',
        'x',
        (m) => warnings.push(m),
      ),
    ).toThrow(/\[server\] allow_rooot: unknown key[\s\S]*\[monitorin\]: unknown section/);
    expect(warnings).toEqual([
      '[server] allow_root: OpenRPort setting not implemented in this version; ignored',
    ]);
  });

  test('a tolerated name used as a key outside its section is not dropped', () => {
    expect(() => parseSvcdConfig('[logging]\nallow_root = true\n')).toThrow(
      /\[logging\] allow_root: unknown key/,
    );
  });
});
