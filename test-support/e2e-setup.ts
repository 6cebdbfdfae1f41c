/** Pieces every end-to-end test of svcd needs: an admin user file and a started svcd process. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { createApiClient, type ApiClient } from './api-client.js';
import { svcdConfigSchema } from '../packages/server/src/config/schema.js';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { DatabaseUserStore } from '../packages/server/src/storage/database-user-store.js';
import { SVCD_BIN, freePort, startProcess, type ProcessOptions, type RunningProcess } from './process.js';

export const E2E_ADMIN = { username: 'admin', password: 'admin-secret-1' };

/** `<dir>/users.json` with one member of Administrators; bcrypt cost 4 keeps logins fast in tests. */
export async function writeAdminUserFile(dir: string, admin = E2E_ADMIN): Promise<void> {
  const users = [
    {
      username: admin.username,
      password: await hash(admin.password, { cost: 4 }),
      groups: ['Administrators'],
    },
  ];
  await writeFile(join(dir, 'users.json'), JSON.stringify(users));
}

/**
 * Starts svcd with a config file and resolves once its API listens; when it does not, the error carries the end
 * of its log and its stderr (a port taken meanwhile is named there).
 */
export async function startSvcdProcess(
  configPath: string,
  options?: ProcessOptions,
  timeoutMs?: number,
): Promise<RunningProcess> {
  const svcd = startProcess(SVCD_BIN, ['-c', configPath], options);
  try {
    await svcd.waitForLog('API listening', timeoutMs);
  } catch (err) {
    await svcd.stop();
    throw new Error(
      `svcd did not start: ${(err as Error).message}\n${svcd.stdoutLines.slice(-20).join('\n')}`,
    );
  }
  return svcd;
}

export interface E2eSvcdConfig {
  /** The agent listener's port ([server] address on 127.0.0.1). */
  clientPort: number;
  /** The API's port ([api] address on 127.0.0.1). */
  apiPort: number;
  /** [server] key_seed, so the fingerprint is stable. */
  keySeed: string;
  /** More [server] lines, e.g. `auth = "agent:agent-password-1"`. */
  server?: string[];
  /** More [api] lines. */
  api?: string[];
  /** Whole sections after [api], e.g. `[database]` and `[cluster]` with their lines. */
  sections?: string[];
  /** How long svcd may take to listen (default 20 s). */
  startTimeoutMs?: number;
  /**
   * API users in database tables of svcd's SQLite file, with group_details (group permissions on), instead of
   * users.json; the admin is seeded there.
   */
  userTables?: boolean;
}

const USER_TABLES = { userTable: 'users', groupTable: 'groups', groupDetailsTable: 'group_details' };

/** The admin in the user tables of `<dir>/data/svcd.db`, the database svcd opens with `data_dir = "data"`. */
export async function seedAdminInUserTables(dir: string, admin = E2E_ADMIN): Promise<void> {
  const dataDir = join(dir, 'data');
  await mkdir(dataDir, { recursive: true });
  const db = await openDatabase(svcdConfigSchema.parse({ database: { db_type: 'sqlite' } }).database, {
    dataDir,
  });
  try {
    const store = await DatabaseUserStore.open(db, USER_TABLES);
    await store.create({
      username: admin.username,
      passwordHash: await hash(admin.password, { cost: 4 }),
      groups: ['Administrators'],
    });
  } finally {
    await db.close();
  }
}

/**
 * `<dir>/svcd.conf` for an end-to-end svcd: both listeners on 127.0.0.1, data in `<dir>/data`, API users from
 * `users.json` (writeAdminUserFile). Returns the file's path.
 */
export async function writeSvcdConfig(dir: string, config: E2eSvcdConfig): Promise<string> {
  const path = join(dir, 'svcd.conf');
  const lines = [
    '[server]',
    `address = "127.0.0.1:${config.clientPort}"`,
    'data_dir = "data"',
    `key_seed = ${JSON.stringify(config.keySeed)}`,
    ...(config.server ?? []),
    '[api]',
    `address = "127.0.0.1:${config.apiPort}"`,
    ...(config.userTables
      ? [
          `auth_user_table = "${USER_TABLES.userTable}"`,
          `auth_group_table = "${USER_TABLES.groupTable}"`,
          `group_details_table = "${USER_TABLES.groupDetailsTable}"`,
        ]
      : ['auth_file = "users.json"']),
    ...(config.api ?? []),
    ...(config.sections ?? []),
  ];
  await writeFile(path, lines.join('\n'));
  return path;
}

/** svcd's host key fingerprint, as `GET /status` reports it to the e2e admin. */
export async function svcdFingerprint(api: ApiClient): Promise<string> {
  const status = await api.get('/status', { auth: { basic: [E2E_ADMIN.username, E2E_ADMIN.password] } });
  return status.json.data.fingerprint as string;
}

/**
 * The usual start of an end-to-end test with agents: the admin user file and svcd.conf in `dir`, svcd started,
 * an API client, and the fingerprint agents pin.
 */
export async function startE2eSvcd(
  dir: string,
  config: E2eSvcdConfig,
  options?: ProcessOptions,
): Promise<{ svcd: RunningProcess; api: ApiClient; fingerprint: string; configPath: string }> {
  if (config.userTables) await seedAdminInUserTables(dir);
  else await writeAdminUserFile(dir);
  const configPath = await writeSvcdConfig(dir, config);
  const svcd = await startSvcdProcess(configPath, options, config.startTimeoutMs);
  const api = createApiClient(`http://127.0.0.1:${config.apiPort}/api/v1`);
  // From the log rather than GET /status, which a second factor closes to Basic credentials.
  const fingerprint = String((await svcd.waitForLog('client listener started')).fingerprint);
  return { svcd, api, fingerprint, configPath };
}

/** A port another process took between freePort() and svcd's bind (tests run side by side). */
const PORT_TAKEN = /address is already in use/;

/**
 * startE2eSvcd on two fresh ports. Another test may take a free port before svcd binds it; then svcd refuses to
 * start naming the port, and this tries again with new ports (three times in all).
 */
export async function startE2eSvcdOnFreePorts(
  dir: string,
  config: Omit<E2eSvcdConfig, 'apiPort' | 'clientPort'>,
  options?: ProcessOptions,
): Promise<Awaited<ReturnType<typeof startE2eSvcd>> & { apiPort: number; clientPort: number }> {
  for (let attempt = 1; ; attempt++) {
    const [apiPort, clientPort] = [await freePort(), await freePort()];
    try {
      return {
        ...(await startE2eSvcd(dir, { ...config, apiPort, clientPort }, options)),
        apiPort,
        clientPort,
      };
    } catch (err) {
      if (attempt >= 3 || !PORT_TAKEN.test(String(err))) throw err;
    }
  }
}
