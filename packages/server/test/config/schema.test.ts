import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError } from '@svc/platform';
import { loadSvcdConfig, parseHostPort, parseSvcdConfig } from '../../src/config/schema.js';
import { problemsOf } from './helpers.js';

const API_ON = '[api]\naddress = "127.0.0.1:3000"\n';

describe('good configs', () => {
  test('port ranges accept numbers and ranges and reject the rest, naming the key', () => {
    const ok = parseSvcdConfig('[server]\nused_ports = ["3000", "20000-20100"]\nexcluded_ports = []\n');
    expect(ok.server.used_ports).toEqual(['3000', '20000-20100']);
    expect(() => parseSvcdConfig('[server]\nused_ports = ["30000-20000", "0", "x"]\n')).toThrow(
      /\[server\] used_ports/,
    );
  });

  test('an empty config gives the defaults', () => {
    expect(parseSvcdConfig('')).toEqual({
      server: {
        address: '0.0.0.0:8080',
        data_dir: './data',
        key_seed: '',
        auth_write: true,
        enable_ws_test_endpoints: false,
        client_login_wait: 2000,
        max_concurrent_ssh_handshakes: 0,
        keepalive_interval: 20_000,
        purge_disconnected_clients: false,
        keep_disconnected_clients: 3_600_000,
        purge_disconnected_clients_interval: 60_000,
        used_ports: ['20000-30000'],
        excluded_ports: ['1-1024'],
        check_port_timeout: 2000,
        upgrade_timeout: 10_000,
        max_connections: 0,
        tls_min: '1.3',
      },
      api: {
        address: '',
        metrics_address: '',
        max_failed_login: 10,
        ban_time: 600_000,
        user_login_wait: 2000,
        max_request_bytes: 1048576,
        read_header_timeout: 5000,
        read_timeout: 30_000,
        idle_timeout: 60_000,
        max_connections: 512,
        max_connections_per_address: 128,
        tls_min: '1.3',
        max_token_lifetime: 90 * 86_400_000,
        enable_ws_test_endpoints: false,
        docs: true,
        enable_web_console: true,
        two_fa_token_ttl_seconds: 600,
        two_fa_send_to_type: 'none',
        totp_enabled: false,
        totp_login_session_ttl: 600_000,
        totp_account_name: 'svc',
        user_header: 'Authentication-User',
        create_missing_users: false,
        default_user_group: 'Administrators',
      },
      database: { db_type: 'sqlite', db_name: '', db_host: '', db_user: '', db_password: '' },
      logging: { log_file: '', log_level: 'info' },
      smtp: { secure: false },
      pushover: { url: 'https://api.pushover.net/1/messages.json' },
      schedules: { missed_run_window: 3_600_000, catch_up_delay: 20_000 },
      alerts: {
        rules: [],
        webhook_timeout: 10_000,
        max_attempts: 5,
        retry_base: 2000,
        queue_size: 1000,
        log_size: 1000,
      },
      cluster: {
        enabled: false,
        nats_url: 'nats://127.0.0.1:4222',
        nats_user: '',
        nats_password: '',
        nats_token: '',
        nats_tls_ca: '',
        nats_prefix: 'svc',
        advertise_address: '',
        heartbeat_interval: 5_000,
        drain_timeout: 30_000,
        takeover_limit: 5,
      },
      audit: { enabled: true, retention: 90, syslog: '', syslog_app_name: 'svcd' },
    });
  });

  test('a minimal config with the API on', () => {
    const config = parseSvcdConfig(
      '[server]\nauth = "client1:secret"\n[api]\naddress = "0.0.0.0:3000"\nauth_file = "users.json"\nban_time = 60\n',
    );
    expect(config.server.auth).toBe('client1:secret');
    expect(config.api).toMatchObject({ address: '0.0.0.0:3000', auth_file: 'users.json', ban_time: 60_000 });
  });

  test('database user store with postgres', () => {
    const config = parseSvcdConfig(
      `${API_ON}auth_user_table = "users"\nauth_group_table = "groups"\ngroup_details_table = "group_details"\n` +
        '[database]\ndb_type = "postgres"\ndb_host = "127.0.0.1:5432"\ndb_name = "test"\n',
    );
    expect(config.database.db_type).toBe('postgres');
    expect(config.api.auth_user_table).toBe('users');
  });

  test('url accepts a string or a list, and always gives a list', () => {
    expect(parseSvcdConfig('[server]\nurl = "https://svc.example.com"\n').server.url).toEqual([
      'https://svc.example.com',
    ]);
    expect(parseSvcdConfig('[server]\nurl = ["http://a:8080", "wss://b"]\n').server.url).toEqual([
      'http://a:8080',
      'wss://b',
    ]);
    expect(parseSvcdConfig('').server.url).toBeUndefined();
  });

  test('IPv6 addresses and ports at the edges', () => {
    expect(
      problemsOf('[server]\naddress = "[::1]:3000"\n[api]\naddress = "localhost:0"\nauth = "a:b"\n'),
    ).toEqual([]);
    expect(problemsOf('[server]\naddress = "h:65535"\n')).toEqual([]);
    expect(parseHostPort('[::1]:3000')).toEqual({ host: '::1', port: 3000 });
    expect(parseHostPort('0.0.0.0:8080')).toEqual({ host: '0.0.0.0', port: 8080 });
  });

  test('loadSvcdConfig reads a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcd-config-'));
    try {
      const file = join(dir, 'svcd.conf');
      writeFileSync(file, '[logging]\nlog_level = "debug"\n');
      expect(loadSvcdConfig(file).logging.log_level).toBe('debug');
      expect(() => loadSvcdConfig(join(dir, 'missing.conf'))).toThrow(ConfigError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('every bad case names its key', () => {
  test('broken TOML reports line and column', () => {
    const [problem] = problemsOf('[api]\naddress = "0.0.0.0:3000\n');
    expect(problem).toMatch(/^line 2, column \d+: invalid TOML: /);
  });

  test('unknown key and unknown section point at the example file', () => {
    expect(problemsOf('[api]\nadress = "x"\n[sever]\naddress = "x"\n')).toEqual([
      '[api] adress: unknown key (check the spelling; see svcd.example.conf)',
      '[sever]: unknown section (check the spelling; see svcd.example.conf)',
    ]);
  });

  test('wrong types', () => {
    expect(problemsOf('[api]\nmax_failed_login = "ten"\n')).toEqual([
      '[api] max_failed_login: expected an integer, got string "ten"',
    ]);
    expect(problemsOf('[server]\nauth_write = "yes"\n')).toEqual([
      '[server] auth_write: expected a boolean (true or false), got string "yes"',
    ]);
    expect(problemsOf('[api]\nban_time = "forever"\n')[0]).toMatch(
      /^\[api\] ban_time: invalid duration "forever"/,
    );
    expect(problemsOf('[api]\nmax_token_lifetime = 0\n')).toEqual([
      '[api] max_token_lifetime: must be longer than 0',
    ]);
  });

  test('several problems at once', () => {
    expect(
      problemsOf(
        '[api]\nmax_failed_login = -1\nauth = "a:b"\nauth_file = "f"\n[database]\ndb_type = "oracle"\n',
      ),
    ).toEqual([
      '[api] max_failed_login: must be at least 0, got number -1',
      '[api] auth: configure exactly one user store: auth, auth_file or auth_user_table (found auth and auth_file)',
      '[database] db_type: must be one of sqlite, postgres, mysql (got string "oracle")',
    ]);
  });

  test('two user stores', () => {
    expect(problemsOf(`${API_ON}auth_file = "f"\nauth_user_table = "u"\nauth_group_table = "g"\n`)).toEqual([
      '[api] auth_file: configure exactly one user store: auth, auth_file or auth_user_table (found auth_file and auth_user_table)',
    ]);
  });

  test('API on without a user store', () => {
    expect(problemsOf(API_ON)).toEqual([
      '[api] address: the API is enabled, so configure exactly one user store: auth, auth_file or auth_user_table',
    ]);
  });

  test('two client credential stores', () => {
    expect(problemsOf('[server]\nauth = "c:p"\nauth_file = "clients.json"\n')).toEqual([
      '[server] auth: configure at most one client credential store: auth, auth_file or auth_table (found auth and auth_file)',
    ]);
  });

  test('user table and group table need each other', () => {
    expect(problemsOf(`${API_ON}auth_user_table = "users"\n`)).toEqual([
      '[api] auth_group_table: required when auth_user_table is set',
    ]);
    expect(problemsOf('[api]\nauth_group_table = "groups"\n')).toEqual([
      '[api] auth_user_table: required when auth_group_table is set',
    ]);
    expect(problemsOf('[api]\nauth_user_table = "users; drop table x"\nauth_group_table = "g"\n')[0]).toMatch(
      /^\[api\] auth_user_table: expected an SQL table name/,
    );
  });

  test.each([['nohost'], ['h:99999'], ['h:'], [':80'], ['::1:80'], ['h:8o']])('bad address %j', (value) => {
    expect(problemsOf(`[server]\naddress = "${value}"\n`)).toEqual([
      '[server] address: expected host:port with a port from 0 to 65535, e.g. 0.0.0.0:8080 or [::1]:3000',
    ]);
  });

  test('bad db_type', () => {
    expect(problemsOf('[database]\ndb_type = "oracle"\n')[0]).toMatch(
      /^\[database\] db_type: must be one of sqlite, postgres, mysql/,
    );
  });

  test('networked database without host and name', () => {
    expect(problemsOf('[database]\ndb_type = "mysql"\n')).toEqual([
      '[database] db_host: required when db_type is mysql',
      '[database] db_name: required when db_type is mysql',
    ]);
  });

  test('bad url', () => {
    expect(problemsOf('[server]\nurl = "svc.example.com"\n')).toEqual([
      '[server] url: must be an absolute http(s):// or ws(s):// URL, got "svc.example.com"',
    ]);
    expect(problemsOf('[server]\nurl = ["http://a", "ftp://b"]\n')).toEqual([
      '[server] url[1]: must be an absolute http(s):// or ws(s):// URL, got "ftp://b"',
    ]);
    expect(problemsOf('[server]\nurl = 5\n')).toEqual([
      '[server] url: expected a URL or a list of URLs, got number 5',
    ]);
  });

  test('malformed static credentials, without echoing them', () => {
    expect(problemsOf('[api]\nauth = "admin"\n[server]\nauth = ":secret"\n')).toEqual([
      '[server] auth: expected "client-id:password" with both parts non-empty',
      '[api] auth: expected "user:password" with both parts non-empty',
    ]);
    expect(problemsOf('[api]\nauth = "admin:"\n')).toEqual([
      '[api] auth: expected "user:password" with both parts non-empty',
    ]);
    expect(problemsOf('[api]\njwt_secret = 123456\n')).toEqual([
      '[api] jwt_secret: expected a string, got number',
    ]);
  });

  test('the static user follows the user rules: a valid name, a password of at most 72 bytes', () => {
    expect(problemsOf('[api]\nauth = "ad\\u202Emin:secret-pass"\n')).toEqual([
      '[api] auth: the user name must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)',
    ]);
    expect(problemsOf(`[api]\nauth = "admin:${'p'.repeat(73)}"\n`)).toEqual([
      '[api] auth: the password must be at most 72 bytes (bcrypt ignores the rest)',
    ]);
    expect(problemsOf(`[api]\nauth = "admin:${'p'.repeat(72)}"\n`)).toEqual([]);
  });

  test('the 2FA keys are accepted with a user store', () => {
    const store = 'auth_file = "users.json"\n';
    expect(problemsOf(`[api]\n${store}totp_enabled = true\n`)).toEqual([]);
    expect(problemsOf(`[api]\n${store}two_fa_token_delivery = "/usr/local/bin/send-code"\n`)).toEqual([]);
    expect(
      problemsOf(`[api]\n${store}totp_enabled = false\ntotp_account_name = "acme"\nuser_header = "X-User"\n`),
    ).toEqual([]);
  });

  test('a code delivery needs its section filled in, and is smtp, pushover or an absolute path', () => {
    const store = 'auth_file = "users.json"\n';
    expect(problemsOf(`[api]\n${store}two_fa_token_delivery = "smtp"\n`)).toEqual([
      '[smtp] server: required when [api] two_fa_token_delivery is "smtp"',
      '[smtp] sender_email: required when [api] two_fa_token_delivery is "smtp"',
    ]);
    expect(
      problemsOf(
        `[api]\n${store}two_fa_token_delivery = "smtp"\n[smtp]\nserver = "mail:587"\nsender_email = "a@b.example"\n`,
      ),
    ).toEqual([]);
    expect(problemsOf(`[api]\n${store}two_fa_token_delivery = "pushover"\n`)).toEqual([
      '[pushover] api_token: required when [api] two_fa_token_delivery is "pushover"',
    ]);
    expect(problemsOf(`[api]\n${store}two_fa_token_delivery = "send-code.sh"\n`)).toEqual([
      '[api] two_fa_token_delivery: expected "smtp", "pushover" or the absolute path of an executable',
    ]);
    expect(problemsOf('[smtp]\nserver = "nohost"\nsender_email = "x"\n')).toEqual([
      '[smtp] server: expected host:port with a port from 0 to 65535, e.g. 0.0.0.0:8080 or [::1]:3000',
      '[smtp] sender_email: expected an e-mail address',
    ]);
  });

  test('delegated authentication: accepted with a user file or tables, refused in combinations that cannot work', () => {
    const file = 'auth_file = "users.json"\n';
    const tables = 'auth_user_table = "users"\nauth_group_table = "groups"\n';
    expect(problemsOf(`[api]\n${file}auth_header = "X-Auth"\n`)).toEqual([]);
    expect(problemsOf(`[api]\n${tables}auth_header = "X-Auth"\ncreate_missing_users = true\n`)).toEqual([]);
    expect(problemsOf('[api]\nauth = "admin:secret-pass"\nauth_header = "X-Auth"\n')).toEqual([
      '[api] auth_header: delegated (header) authentication is not possible with the single static user ([api] auth); use auth_file or auth_user_table',
    ]);
    expect(problemsOf(`[api]\n${file}auth_header = "X-Auth"\ncreate_missing_users = true\n`)).toEqual([
      '[api] create_missing_users: users created at login must take effect at once, but the user file (auth_file) is read only at start and reload; use auth_user_table',
    ]);
    expect(problemsOf(`[api]\n${tables}create_missing_users = true\n`)).toEqual([
      '[api] create_missing_users: only used with auth_header (delegated authentication); set it or remove this',
    ]);
    expect(problemsOf(`[api]\n${tables}auth_header = "X-User"\nuser_header = "x-user"\n`)).toEqual([
      '[api] user_header: must differ from auth_header',
    ]);
  });

  test('second factors conflict with each other and with the static user', () => {
    const problems = problemsOf('[api]\nauth = "a:b"\ntotp_enabled = true\ntwo_fa_token_delivery = "smtp"\n');
    expect(problems).toContain(
      '[api] totp_enabled: cannot be combined with two_fa_token_delivery; choose one second factor',
    );
    expect(problems).toContain(
      '[api] totp_enabled: authenticator-app login is not possible with the single static user ([api] auth); use auth_file or auth_user_table',
    );
    expect(problems).toContain(
      '[api] two_fa_token_delivery: two-factor login is not possible with the single static user ([api] auth); use auth_file or auth_user_table',
    );
  });

  test('listener timeouts: within 100ms..1h, and the whole request at least as long as its headers', () => {
    expect(problemsOf('[api]\nread_header_timeout = "20s"\nread_timeout = "5s"\n')).toEqual([
      '[api] read_timeout: must be at least read_header_timeout (the headers are part of the request)',
    ]);
    expect(problemsOf('[api]\nidle_timeout = 0\n[server]\nupgrade_timeout = "2h"\n')).toEqual([
      '[server] upgrade_timeout: must be between 100ms and 1h',
      '[api] idle_timeout: must be between 100ms and 1h',
    ]);
    expect(problemsOf('[api]\nmax_connections = -1\n')[0]).toMatch(/^\[api\] max_connections: /);
    const config = parseSvcdConfig('[api]\nread_header_timeout = "2s"\nread_timeout = "2s"\n');
    expect(config.api).toMatchObject({ read_header_timeout: 2000, read_timeout: 2000 });
  });

  test('regex send-to check needs its pattern', () => {
    expect(problemsOf('[api]\ntwo_fa_send_to_type = "regex"\n')).toEqual([
      '[api] two_fa_send_to_regex: required when two_fa_send_to_type is "regex"',
    ]);
    expect(problemsOf('[api]\ntwo_fa_send_to_regex = "("\n')).toEqual([
      '[api] two_fa_send_to_regex: expected a valid regular expression',
    ]);
  });
});
