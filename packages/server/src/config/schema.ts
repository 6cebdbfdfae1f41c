import { z } from 'zod';
import {
  describeValue,
  durationToMilliseconds,
  durationTypeError,
  loadTomlConfig,
  parseTomlConfig,
} from '@svc/platform';
import { PASSWORD_MAX_BYTES, passwordByteLength, usernameProblem } from '@svc/protocol';
import { isAbsolute } from 'node:path';
import { OPENRPORT_KEYS } from './openrport-keys.js';
import { alertsSection } from './alerts-schema.js';

export const EXAMPLE_CONFIG_FILE = 'svcd.example.conf';

// ---- value types ------------------------------------------------------------------------------------

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/;

/** Splits `host:port` or `[v6]:port`; undefined when malformed or the port is above 65535. */
export function parseHostPort(address: string): { host: string; port: number } | undefined {
  const match = HOST_PORT.exec(address);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { host: match[1] ?? match[2] ?? '', port };
}

const ADDRESS_FORM = 'expected host:port with a port from 0 to 65535, e.g. 0.0.0.0:8080 or [::1]:3000';
const address = z.string().refine((value) => parseHostPort(value) !== undefined, ADDRESS_FORM);
const optionalAddress = z
  .string()
  .refine((value) => value === '' || parseHostPort(value) !== undefined, ADDRESS_FORM);

const credential = (form: string) =>
  z.string().refine((value) => {
    const colon = value.indexOf(':');
    return colon > 0 && colon < value.length - 1;
  }, `expected "${form}" with both parts non-empty`);

const tableName = z
  .string()
  .refine(
    (value) => /^[A-Za-z_][A-Za-z0-9_]{0,62}(?:\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/.test(value),
    'expected an SQL table name (letters, digits and _, optionally schema.table)',
  );

const path = z.string().min(1);
const headerName = z
  .string()
  .refine((value) => /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(value), 'expected an HTTP header name');

function isAbsoluteUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return ['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.host !== '';
  } catch {
    return false;
  }
}

/** One URL or a list of them; the output is always a list. */
const urlList = z
  .union([z.string(), z.array(z.string())], {
    error: (issue) => `expected a URL or a list of URLs, got ${describeValue(issue.input)}`,
  })
  .transform((value, ctx) => {
    const list = typeof value === 'string' ? [value] : value;
    if (list.length === 0)
      ctx.addIssue({ code: 'custom', input: value, message: 'list at least one URL or remove the key' });
    list.forEach((url, index) => {
      if (isAbsoluteUrl(url)) return;
      const message = `must be an absolute http(s):// or ws(s):// URL, got ${JSON.stringify(url)}`;
      ctx.addIssue({ code: 'custom', input: url, message, path: typeof value === 'string' ? [] : [index] });
    });
    return list;
  });

const PORT_RANGE = /^(\d{1,5})(?:-(\d{1,5}))?$/;

/** Port numbers or "from-to" ranges, each within 1..65535. */
const portRanges = z.array(
  z.string().refine((value) => {
    const match = PORT_RANGE.exec(value.trim());
    if (!match) return false;
    const from = Number(match[1]);
    const to = Number(match[2] ?? match[1]);
    return from >= 1 && to <= 65535 && from <= to;
  }, 'expected a port (1-65535) or a range "from-to", e.g. "20000-30000"'),
);

const regexSource = z.string().refine((value) => {
  try {
    new RegExp(value);
    return true;
  } catch {
    return false;
  }
}, 'expected a valid regular expression');

/** A duration in milliseconds (the agent's zod/mini durationSchema, as classic zod). */
const durationSchema = z
  .union([z.number(), z.string()], { error: durationTypeError })
  .transform(durationToMilliseconds);

/** Read and idle limits of a listener; Node's timers cannot go beyond ~24 days, and nothing here needs to. */
const listenerTimeout = durationSchema.refine(
  (ms) => ms >= 100 && ms <= 3_600_000,
  'must be between 100ms and 1h',
);

/** `1.2` or `1.3`, written as a string or a TOML number; the output is always the string. */
const tlsVersion = z.preprocess(
  (value) => (typeof value === 'number' ? String(value) : value),
  z.enum(['1.2', '1.3'], { error: 'expected "1.2" or "1.3"' }),
);

// ---- cross-field rules --------------------------------------------------------------------------------

type Section = Record<string, unknown>;
type Report = (key: string, message: string) => void;

const isSet = (value: unknown): boolean => typeof value === 'string' && value !== '';
const presentKeys = (section: Section, keys: string[]) => keys.filter((key) => isSet(section[key]));

/** Section rules also run when another key of the section is invalid, so every problem shows at once. */
function sectionRules<T extends object>(rules: (section: Section, report: Report) => void) {
  return [
    (section: T, ctx: z.core.$RefinementCtx<T>) =>
      rules(section as Section, (key, message) => ctx.addIssue({ code: 'custom', path: [key], message })),
    { when: (payload: z.core.ParsePayload) => typeof payload.value === 'object' && payload.value !== null },
  ] as const;
}

const USER_STORES = ['auth', 'auth_file', 'auth_user_table'];
const CLIENT_STORES = ['auth', 'auth_file', 'auth_table'];

/** Features the single static user cannot have (spec 5.2.1, 5.3.1, 5.4.1). */
const NEEDS_USER_STORE: { key: string; enabled: (api: Section) => boolean; feature: string }[] = [
  {
    key: 'two_fa_token_delivery',
    enabled: (api) => isSet(api.two_fa_token_delivery),
    feature: 'two-factor login',
  },
  { key: 'totp_enabled', enabled: (api) => api.totp_enabled === true, feature: 'authenticator-app login' },
];

/** A certificate needs its key and a key its certificate. */
function pairRule(section: Section, report: Report, cert: string, key: string): void {
  if (isSet(section[cert]) && !isSet(section[key])) report(key, `required when ${cert} is set`);
  if (isSet(section[key]) && !isSet(section[cert])) report(cert, `required when ${key} is set`);
}

function serverRules(server: Section, report: Report): void {
  pairRule(server, report, 'tls_cert', 'tls_key');
  const stores = presentKeys(server, CLIENT_STORES);
  if (stores.length > 1) {
    report(
      stores[0] ?? 'auth',
      `configure at most one client credential store: auth, auth_file or auth_table (found ${stores.join(' and ')})`,
    );
  }
}

function apiRules(api: Section, report: Report): void {
  pairRule(api, report, 'cert_file', 'key_file');
  // Port 0 (any free port, tests) cannot clash.
  if (
    isSet(api.metrics_address) &&
    api.metrics_address === api.address &&
    parseHostPort(String(api.address))?.port !== 0
  )
    report('metrics_address', 'must differ from address: the metrics have a listener of their own');
  // Node refuses a header timeout longer than the whole-request timeout.
  if (
    typeof api.read_timeout === 'number' &&
    typeof api.read_header_timeout === 'number' &&
    api.read_timeout < api.read_header_timeout
  ) {
    report('read_timeout', 'must be at least read_header_timeout (the headers are part of the request)');
  }
  const stores = presentKeys(api, USER_STORES);
  const storeList = 'auth, auth_file or auth_user_table';
  if (stores.length > 1) {
    report(
      stores[0] ?? 'auth',
      `configure exactly one user store: ${storeList} (found ${stores.join(' and ')})`,
    );
  } else if (stores.length === 0 && isSet(api.address)) {
    report('address', `the API is enabled, so configure exactly one user store: ${storeList}`);
  }
  if (isSet(api.auth_user_table) && !isSet(api.auth_group_table)) {
    report('auth_group_table', 'required when auth_user_table is set');
  }
  if (isSet(api.auth_group_table) && !isSet(api.auth_user_table)) {
    report('auth_user_table', 'required when auth_group_table is set');
  }
  if (isSet(api.group_details_table) && !isSet(api.auth_user_table)) {
    report(
      'group_details_table',
      'only used with auth_user_table and auth_group_table; set those or remove it',
    );
  }
  if (api.two_fa_send_to_type === 'regex' && !isSet(api.two_fa_send_to_regex)) {
    report('two_fa_send_to_regex', 'required when two_fa_send_to_type is "regex"');
  }
  if (api.totp_enabled === true && isSet(api.two_fa_token_delivery)) {
    report('totp_enabled', 'cannot be combined with two_fa_token_delivery; choose one second factor');
  }
  if (isSet(api.auth)) staticUserRules(api.auth as string, report);
  delegatedAuthRules(api, report);
  if (isSet(api.auth)) {
    for (const { key, enabled, feature } of NEEDS_USER_STORE) {
      if (enabled(api)) {
        report(
          key,
          `${feature} is not possible with the single static user ([api] auth); use auth_file or auth_user_table`,
        );
      }
    }
  }
}

/** Delegated authentication (spec 5.5) and the combinations it cannot work in. */
function delegatedAuthRules(api: Section, report: Report): void {
  if (!isSet(api.auth_header)) {
    if (api.create_missing_users === true)
      report(
        'create_missing_users',
        'only used with auth_header (delegated authentication); set it or remove this',
      );
    return;
  }
  if (isSet(api.auth)) {
    report(
      'auth_header',
      'delegated (header) authentication is not possible with the single static user ([api] auth); use auth_file or auth_user_table',
    );
  }
  if (
    typeof api.user_header === 'string' &&
    api.user_header.toLowerCase() === String(api.auth_header).toLowerCase()
  )
    report('user_header', 'must differ from auth_header');
  if (api.create_missing_users === true && isSet(api.auth_file)) {
    report(
      'create_missing_users',
      'users created at login must take effect at once, but the user file (auth_file) is read only at start and reload; use auth_user_table',
    );
  }
}

/** The static user follows the user API's rules: its name must be a valid one, its password fit bcrypt. */
function staticUserRules(auth: string, report: Report): void {
  const colon = auth.indexOf(':');
  if (colon <= 0) return; // the credential format check reports it
  const problem = usernameProblem(auth.slice(0, colon));
  if (problem !== undefined) report('auth', `the user name ${problem}`);
  if (passwordByteLength(auth.slice(colon + 1)) > PASSWORD_MAX_BYTES) {
    report('auth', `the password must be at most ${PASSWORD_MAX_BYTES} bytes (bcrypt ignores the rest)`);
  }
}

function databaseRules(database: Section, report: Report): void {
  const type = database.db_type;
  if (type !== 'postgres' && type !== 'mysql') return;
  for (const key of ['db_host', 'db_name']) {
    if (!isSet(database[key])) report(key, `required when db_type is ${type}`);
  }
}

/** The section a delivery reads must hold what it needs. */
function deliveryRules(
  config: { api: Section; smtp: Section; pushover: Section },
  report: (section: string, key: string, message: string) => void,
): void {
  const delivery = config.api.two_fa_token_delivery;
  const needs: Record<string, string[]> = { smtp: ['server', 'sender_email'], pushover: ['api_token'] };
  if (delivery !== 'smtp' && delivery !== 'pushover') return;
  for (const key of needs[delivery] ?? []) {
    if (!isSet(config[delivery][key]))
      report(delivery, key, `required when [api] two_fa_token_delivery is "${delivery}"`);
  }
}

// ---- sections -----------------------------------------------------------------------------------------

const serverSection = z
  .strictObject({
    address: address.default('0.0.0.0:8080').describe('Address (host:port) the agents connect to.'),
    url: urlList
      .optional()
      .describe(
        'Public URL, or list of URLs, agents use to reach the server (GET /status); default http://<address>.',
      )
      .meta({ example: ['https://svcd.example.com:8080'] }),
    data_dir: path.default('./data').describe('Directory for the database, host key and other server state.'),
    key_seed: z
      .string()
      .default('')
      .describe(
        'Seed for the SSH host key (and so the fingerprint); empty = a key generated once and kept in data_dir.',
      ),
    auth: credential('client-id:password')
      .optional()
      .describe('Single client credential as "client-id:password" (one client credential store only).')
      .meta({ example: 'client1:change-me' }),
    auth_file: path
      .optional()
      .describe('JSON file mapping client-auth ids to passwords (one client credential store only).')
      .meta({ example: '/var/lib/svcd/client-auth.json' }),
    auth_table: tableName
      .optional()
      .describe(
        'Database table of client credentials, columns id and password (one client credential store only).',
      )
      .meta({ example: 'clients_auth' }),
    auth_write: z
      .boolean()
      .default(true)
      .describe('Allow changing client credentials through the API (/clients-auth).'),
    enable_ws_test_endpoints: z.boolean().default(false).describe('Serve the WebSocket test pages.'),
    client_login_wait: durationSchema
      .prefault('2s')
      .describe('Wait imposed on a client-auth id after a failed agent login.'),
    max_concurrent_ssh_handshakes: z
      .int()
      .min(0)
      .default(0)
      .describe('Agent handshakes run at once; others wait. 0 = half the CPU count (at least 1).'),
    keepalive_interval: durationSchema
      .refine((ms) => ms >= 1000, 'must be at least 1s')
      .prefault('20s')
      .describe(
        'How often agents ping svcd (svcd pings an agent only after more silence); a peer silent for 2 intervals plus 10s is dropped.',
      ),
    purge_disconnected_clients: z
      .boolean()
      .default(false)
      .describe('Delete clients that stayed disconnected longer than keep_disconnected_clients.'),
    keep_disconnected_clients: durationSchema
      .prefault('1h')
      .describe('How long a disconnected client stays listed when purging is on.'),
    purge_disconnected_clients_interval: durationSchema
      .refine((ms) => ms >= 1000, 'must be at least 1s')
      .prefault('1m')
      .describe('How often disconnected clients are purged.'),
    used_ports: portRanges
      .default(['20000-30000'])
      .describe('Server ports tunnels may listen on: numbers or "from-to" ranges.'),
    excluded_ports: portRanges.default(['1-1024']).describe('Ports removed from used_ports.'),
    check_port_timeout: durationSchema
      .refine((ms) => ms > 0 && ms <= 60_000, 'must be between 1ms and 1m')
      .prefault('2s')
      .describe('How long the agent may take to check that a tunnel target accepts connections.'),
    upgrade_timeout: listenerTimeout
      .prefault('10s')
      .describe(
        'Time a new connection has to send its whole WebSocket upgrade request; a slower one gets 408 and is ' +
          'closed. Connected agents are not affected.',
      ),
    max_connections: z
      .int()
      .min(0)
      .default(0)
      .describe(
        'Open connections on the agent listener at most, connected agents included; more are closed at once. ' +
          '0 = no limit: an svcd serves 10,000+ agents, so raise the open-file limit (ulimit -n) instead.',
      ),
    tls_cert: path
      .optional()
      .describe(
        'PEM certificate (chain) for the agent listener: agents then connect with wss:// (https:// in svc). ' +
          'Needs tls_key.',
      )
      .meta({ example: '/etc/svcd/tls/agents.crt' }),
    tls_key: path
      .optional()
      .describe('PEM private key of tls_cert.')
      .meta({ example: '/etc/svcd/tls/agents.key' }),
    tls_min: tlsVersion
      .default('1.3')
      .describe('Oldest TLS version the agent listener accepts with tls_cert: "1.2" or "1.3".'),
  })
  .superRefine(...sectionRules(serverRules))
  .describe('Agent listener and client credentials.');

const apiSection = z
  .strictObject({
    address: optionalAddress
      .default('')
      .describe('Address (host:port) of the management API, e.g. "0.0.0.0:3000"; empty = API off.'),
    metrics_address: optionalAddress
      .default('')
      .describe(
        'Address (host:port) of the Prometheus metrics listener (GET /metrics, no authentication), ' +
          'e.g. "127.0.0.1:9090"; empty = off. A listener of its own, so the metrics are never served with ' +
          'the API by accident: bind it where only the monitoring can reach it.',
      ),
    auth: credential('user:password')
      .optional()
      .describe('Single static user as "user:password" (one user store only; no user API, no 2FA).')
      .meta({ example: 'admin:change-me' }),
    auth_file: path
      .optional()
      .describe('JSON file listing the API users with bcrypt passwords and groups (one user store only).')
      .meta({ example: '/var/lib/svcd/api-auth.json' }),
    auth_user_table: tableName
      .optional()
      .describe('Database table of API users (one user store only; needs auth_group_table).')
      .meta({ example: 'users' }),
    auth_group_table: tableName
      .optional()
      .describe('Database table of user-to-group memberships (needs auth_user_table).')
      .meta({ example: 'groups' }),
    group_details_table: tableName
      .optional()
      .describe(
        'Database table of group permissions (optional, with auth_user_table); set, it turns group permissions on: ' +
          'a group without a row grants nothing.',
      )
      .meta({ example: 'group_details' }),
    jwt_secret: z
      .string()
      .min(1)
      .optional()
      .describe('Secret that signs API tokens; when unset a random one is generated and kept in data_dir.')
      .meta({ example: 'a-long-random-string' }),
    max_failed_login: z
      .int()
      .min(0)
      .default(10)
      .describe('Failed logins from one IP address before it is banned; 0 disables the ban.'),
    ban_time: durationSchema.prefault('10m').describe('How long an IP address stays banned.'),
    user_login_wait: durationSchema
      .prefault('2s')
      .describe('Wait imposed on a username after a failed login.'),
    max_request_bytes: z
      .int()
      .min(1)
      .default(1048576)
      .describe('Largest accepted API request body, in bytes.'),
    read_header_timeout: listenerTimeout
      .prefault('5s')
      .describe(
        'Time a client has to send the request line and headers (and, over HTTPS, to finish the TLS handshake); ' +
          'a slower request gets 408 and is closed. Short, so that a client sending its headers slowly ' +
          '(slowloris) holds a connection only briefly.',
      ),
    read_timeout: listenerTimeout
      .prefault('30s')
      .describe(
        'Time a client has to send a whole request, body included (at least read_header_timeout); ' +
          'a slower request gets 408 and is closed.',
      ),
    idle_timeout: listenerTimeout
      .prefault('60s')
      .describe('How long a keep-alive connection may wait for its next request before it is closed.'),
    max_connections: z
      .int()
      .min(0)
      .default(512)
      .describe(
        'Open API connections at most; more are closed at once (0 = no limit). The API serves people and ' +
          'scripts, a few dozen connections at a time; 512 keeps it from taking the open-file limit ' +
          '(often 1024) that agents, tunnels and the database need. When all are open, the address holding ' +
          'the most gives up its oldest connection to a newcomer holding fewer.',
      ),
    max_connections_per_address: z
      .int()
      .min(0)
      .default(128)
      .describe(
        'Open API connections per client address (IPv6: per /64) at most; more are closed at once, and half ' +
          'as many requests per address are handled at once (more get 429). Keeps one address from taking ' +
          'the API from everybody else. 0 = no share: set it behind a reverse proxy, where every request ' +
          "comes from the proxy's address.",
      ),
    cert_file: path
      .optional()
      .describe(
        'PEM certificate (chain) to serve the API over HTTPS, and /ws/* over wss. Needs key_file; ' +
          'without both the API speaks plain HTTP.',
      )
      .meta({ example: '/etc/svcd/tls/api.crt' }),
    key_file: path
      .optional()
      .describe('PEM private key of cert_file.')
      .meta({ example: '/etc/svcd/tls/api.key' }),
    tls_min: tlsVersion
      .default('1.3')
      .describe('Oldest TLS version the API accepts with cert_file: "1.2" or "1.3".'),
    max_token_lifetime: durationSchema
      .refine((ms) => ms > 0, 'must be longer than 0')
      .prefault('90d')
      .describe('Longest lifetime a client may request with token-lifetime.'),
    enable_ws_test_endpoints: z.boolean().default(false).describe('Serve the WebSocket test pages.'),
    docs: z
      .boolean()
      .default(true)
      .describe(
        'Serve the API documentation page at /api/v1/docs. The OpenAPI document /api/v1/openapi.json is ' +
          'served either way.',
      ),
    enable_web_console: z
      .boolean()
      .default(true)
      .describe('Serve the web console at / of the API listener (unless doc_root names another UI).'),
    doc_root: path
      .optional()
      .describe(
        "Folder of another static web UI to serve at / instead of the console (OpenRPort's key); paths " +
          'that are no file get its index.html, so deep links work.',
      )
      .meta({ example: '/var/lib/svcd/ui' }),
    two_fa_token_delivery: z
      .string()
      .refine(
        (value) => value === 'smtp' || value === 'pushover' || isAbsolute(value),
        'expected "smtp", "pushover" or the absolute path of an executable',
      )
      .optional()
      .describe(
        'Enables two-factor login with delivered codes: "smtp" (e-mail, [smtp]), "pushover" ([pushover]) or the ' +
          'absolute path of an executable run with SVC_2FA_TOKEN, SVC_2FA_SENDTO and SVC_2FA_TOKEN_TTL.',
      )
      .meta({ example: 'smtp' }),
    two_fa_token_ttl_seconds: z.int().min(1).default(600).describe('Lifetime of a 2FA code, in seconds.'),
    two_fa_send_to_type: z
      .enum(['none', 'email', 'regex'])
      .default('none')
      .describe("Check of users' two_fa_send_to for executable delivery: none, email or regex."),
    two_fa_send_to_regex: regexSource
      .optional()
      .describe('Pattern two_fa_send_to must match when two_fa_send_to_type is "regex".')
      .meta({ example: '^\\+[0-9]{6,15}$' }),
    totp_enabled: z.boolean().default(false).describe('Enables login with an authenticator app (TOTP).'),
    totp_login_session_ttl: durationSchema
      .prefault('10m')
      .describe('Time allowed between /login and /verify-2fa in two-factor modes.'),
    totp_account_name: z
      .string()
      .min(1)
      .default('svc')
      .describe('Account label shown in the authenticator app.'),
    auth_header: headerName
      .optional()
      .describe(
        'Enables delegated authentication: header a reverse proxy sets on pre-authenticated requests.',
      )
      .meta({ example: 'X-Authenticated' }),
    user_header: headerName
      .default('Authentication-User')
      .describe('Header carrying the user name in delegated mode.'),
    create_missing_users: z
      .boolean()
      .default(false)
      .describe('Create users seen in the user header (delegated mode).'),
    default_user_group: z
      .string()
      .min(1)
      .default('Administrators')
      .describe('Group given to users created in delegated mode.'),
  })
  .superRefine(...sectionRules(apiRules))
  .describe('Management HTTP API and its users.');

const databaseSection = z
  .strictObject({
    db_type: z
      .enum(['sqlite', 'postgres', 'mysql'])
      .default('sqlite')
      .describe('Database engine: sqlite, postgres or mysql.'),
    db_name: z
      .string()
      .default('')
      .describe('Database name, or file path for sqlite; empty = <data_dir>/svcd.db.'),
    db_host: z.string().default('').describe('Database server host or host:port (postgres and mysql).'),
    db_user: z.string().default('').describe('Database user (postgres and mysql).'),
    db_password: z.string().default('').describe('Database password (postgres and mysql).'),
  })
  .superRefine(...sectionRules(databaseRules))
  .describe("Database holding the server's data and the optional user and credential tables.");

const smtpSection = z
  .strictObject({
    server: address
      .optional()
      .describe('SMTP server as host:port (needed when two_fa_token_delivery = "smtp").')
      .meta({ example: 'smtp.example.com:587' }),
    sender_email: z
      .string()
      .refine((value) => /^[^\s@]+@[^\s@]+$/.test(value), 'expected an e-mail address')
      .optional()
      .describe('From address of the login-code mails (needed with SMTP delivery).')
      .meta({ example: 'svcd@example.com' }),
    auth_username: z
      .string()
      .min(1)
      .optional()
      .describe('SMTP user name, when the server wants a login.')
      .meta({ example: 'svcd' }),
    auth_password: z
      .string()
      .optional()
      .describe('SMTP password for auth_username.')
      .meta({ example: 'change-me' }),
    secure: z
      .boolean()
      .default(false)
      .describe(
        'true: TLS from the first byte (usually port 465); false: plain, upgraded with STARTTLS when the server offers it.',
      ),
  })
  .describe(
    'Mail server for two-factor login codes (two_fa_token_delivery = "smtp") and alert e-mail ([[alerts.rules]] email).',
  );

const pushoverSection = z
  .strictObject({
    api_token: z
      .string()
      .min(1)
      .optional()
      .describe('Pushover application token (needed when two_fa_token_delivery = "pushover").')
      .meta({ example: 'azGDORePK8gMaC0QOYAMyEEuzJnyUi' }),
    url: z
      .string()
      .refine((value) => /^https?:\/\//.test(value) && URL.canParse(value), 'expected an http(s):// URL')
      .default('https://api.pushover.net/1/messages.json')
      .describe("Pushover's messages endpoint. Each user's two_fa_send_to is their Pushover user key."),
  })
  .describe('Pushover push messages for two-factor login codes (two_fa_token_delivery = "pushover").');

const schedulesSection = z
  .strictObject({
    missed_run_window: durationSchema
      .refine((ms) => ms >= 0, 'must not be negative')
      .prefault('1h')
      .describe(
        'A schedule firing missed while svcd was not running runs once at start if it is at most this old; older ones are recorded as missed. 0 = never catch up.',
      ),
    catch_up_delay: durationSchema
      .refine((ms) => ms >= 0 && ms <= 600_000, 'must be between 0s and 10m')
      .prefault('20s')
      .describe(
        'Wait after svcd starts before the first firings (those missed while it was down), so that agents have reconnected.',
      ),
  })
  .describe('Schedules (POST /schedules): cron-timed runs on many clients.');

/** A NATS subject token and KV key part: letters, digits, _ and -. */
const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function clusterRules(cluster: Section, report: Report): void {
  if (isSet(cluster.nats_token) && (isSet(cluster.nats_user) || isSet(cluster.nats_password)))
    report('nats_token', 'use either nats_token or nats_user and nats_password, not both');
  if (isSet(cluster.nats_user) !== isSet(cluster.nats_password))
    report(
      isSet(cluster.nats_user) ? 'nats_password' : 'nats_user',
      'nats_user and nats_password go together',
    );
}

const clusterSection = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('Run as one node of several sharing the database (PostgreSQL or MySQL) and NATS.'),
    node_id: z
      .string()
      .refine((value) => NODE_ID.test(value), 'expected 1-64 letters, digits, _ or -')
      .optional()
      .describe("This node's id, unique in the cluster; default: the host name (other characters become -).")
      .meta({ example: 'svcd-1' }),
    nats_url: z
      .string()
      .refine(
        (value) => /^(nats|tls):\/\/[^\s]+$/.test(value),
        'expected nats://host:port or tls://host:port',
      )
      .default('nats://127.0.0.1:4222')
      .describe('NATS server (with JetStream) the nodes share.'),
    nats_user: z.string().default('').describe('NATS user name, with nats_password.'),
    nats_password: z.string().default('').describe('NATS password for nats_user.'),
    nats_token: z.string().default('').describe('NATS token (instead of a user and password).'),
    nats_tls_ca: z
      .string()
      .default('')
      .describe('CA file to verify the NATS server with; empty = system CAs.'),
    nats_prefix: z
      .string()
      .refine((value) => /^[A-Za-z0-9_]{1,32}$/.test(value), 'expected 1-32 letters, digits or _')
      .default('svc')
      .describe('Prefix of the NATS subjects and KV buckets; clusters sharing one NATS need different ones.'),
    advertise_address: z
      .string()
      .default('')
      .describe(
        "Host name operators reach this node's tunnels by (tunnel_url); empty = the host of [server] url, else the API host name asked.",
      ),
    heartbeat_interval: durationSchema
      .refine((ms) => ms >= 100 && ms <= 60_000, 'must be between 100ms and 1m')
      .prefault('5s')
      .describe('How often the node renews its presence; a node silent for 3 intervals counts as gone.'),
    drain_timeout: durationSchema
      .refine((ms) => ms >= 0 && ms <= 600_000, 'must be between 0s and 10m')
      .prefault('30s')
      .describe(
        'On SIGTERM or `svcd drain`: how long the node waits for its agents to move to other nodes before it exits.',
      ),
    takeover_limit: z
      .number()
      .int()
      .min(1)
      .default(5)
      .describe(
        'Moves of one client id between nodes within a minute (the newest connection wins) before a node refuses new connections of it: two agents sharing an id.',
      ),
  })
  .superRefine(...sectionRules(clusterRules))
  .describe('Several svcd nodes as one (PostgreSQL or MySQL + NATS with JetStream).');
const auditSection = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'Keep the audit log (GET /auditlog): writes, runs, tunnels, logins, vault reads, refusals, agent connects.',
      ),
    retention: z
      .number()
      .int()
      .min(0)
      .default(90)
      .describe('Days an audit record is kept (purged daily); 0 = keep forever.'),
    syslog: z
      .string()
      .regex(/^((udp|tcp):\/\/.+)?$/, 'must be udp://host:port or tcp://host:port')
      .default('')
      .describe(
        'Also send each record as RFC 5424 syslog to this collector (udp://host:514 or tcp://host:514); empty = off.',
      ),
    syslog_app_name: z.string().min(1).max(48).default('svcd').describe('APP-NAME of the syslog messages.'),
  })
  .describe('The audit log (GET /auditlog) and its copy to a syslog collector.');

const loggingSection = z
  .strictObject({
    log_file: z.string().default('').describe('File to append JSON log lines to; empty = stdout.'),
    log_level: z
      .enum(['error', 'warn', 'info', 'debug'])
      .default('info')
      .describe('Least severe level logged.'),
  })
  .describe('Log output.');

export const svcdConfigSchema = z
  .strictObject({
    server: serverSection.prefault({}),
    api: apiSection.prefault({}),
    database: databaseSection.prefault({}),
    logging: loggingSection.prefault({}),
    smtp: smtpSection.prefault({}),
    pushover: pushoverSection.prefault({}),
    schedules: schedulesSection.prefault({}),
    alerts: alertsSection.prefault({}),
    cluster: clusterSection.prefault({}),
    audit: auditSection.prefault({}),
  })
  .superRefine((config, ctx) => {
    const report = (section: string, key: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [section, key], message });
    deliveryRules(config, report);
    if (config.alerts.rules.some((rule) => rule.email))
      for (const key of ['server', 'sender_email'] as const)
        if (!config.smtp[key]) report('smtp', key, 'required when an alert rule sends e-mail');
    if (config.cluster.enabled && config.database.db_type === 'sqlite')
      ctx.addIssue({
        code: 'custom',
        path: ['cluster', 'enabled'],
        message:
          'cluster mode needs a database the nodes share: set [database] db_type = "postgres" or "mysql" (SQLite is one node\'s file)',
      });
  });

export type SvcdConfig = z.output<typeof svcdConfigSchema>;

/** Called once per OpenRPort key that a config carries and svcd ignores. */
export type ConfigWarning = (message: string) => void;

const loadOptions = (onWarning?: ConfigWarning) => ({
  exampleFile: EXAMPLE_CONFIG_FILE,
  tolerated: OPENRPORT_KEYS,
  ...(onWarning ? { onWarning } : {}),
});

/** Reads and validates an svcd config file; throws ConfigError listing every problem. */
export function loadSvcdConfig(filePath: string, onWarning?: ConfigWarning): SvcdConfig {
  return loadTomlConfig(filePath, svcdConfigSchema, loadOptions(onWarning));
}

/** Validates svcd config TOML text; `source` names it in messages. */
export function parseSvcdConfig(text: string, source?: string, onWarning?: ConfigWarning): SvcdConfig {
  return parseTomlConfig(text, svcdConfigSchema, { ...loadOptions(onWarning), source });
}
