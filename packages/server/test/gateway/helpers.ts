import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createApiClient, type ApiClient } from '../../../../test-support/api-client.js';
import type { AgentLinkOptions } from '../../../../test-support/agent-client.js';
import { createTestDatabase, type TestDatabase } from '../../../../test-support/databases.js';
import type { LogLine } from '../../../../test-support/process.js';
import { resolveConfigPaths } from '../../src/cli/resolve-paths.js';
import { svcdConfigSchema, type SvcdConfig } from '../../src/config/schema.js';
import type { AgentLinkTuning } from '../../src/gateway/agent-link.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
import type { DbEngine } from '../../src/storage/database.js';

export const API_USER: [string, string] = ['admin', 'admin-secret-1'];
export const AUTH = { basic: API_USER } as const;
/** Client credentials in the test servers' `[server] auth_file`. */
export const CLIENT_AUTH = { 'agents-a': 'secret-a-123', 'agents-b': 'secret-b-456' };

export interface GatewayServerOptions {
  /** Raw `[server]` keys over the test defaults. */
  server?: Record<string, unknown>;
  /** Raw `[api]` keys over the test defaults. */
  api?: Record<string, unknown>;
  tuning?: Partial<AgentLinkTuning>;
  /** Dispatches at once of a concurrent multi-client job. */
  concurrentJobWindow?: number;
  memoryReclaim?: ServerOptions['memoryReclaim'];
  engine?: DbEngine;
}

export interface GatewayServer {
  server: RunningServer;
  api: ApiClient;
  config: SvcdConfig;
  /** Every log line of every start of this server, parsed. */
  logs: LogLine[];
  /** ws:// URL of the agent listener. */
  url: string;
  /** Connection options for credential `agents-a`. */
  agent(authId?: keyof typeof CLIENT_AUTH): AgentLinkOptions;
  /** Stops svcd and starts it again on the same data dir and database. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A real svcd in this process on loopback ports, with client credentials and a log that tests can read. */
export async function startGatewayServer(options: GatewayServerOptions = {}): Promise<GatewayServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svcd-gateway-'));
  const authFile = join(dataDir, 'clients-auth.json');
  await writeFile(authFile, JSON.stringify(CLIENT_AUTH), { mode: 0o600 });
  let database: TestDatabase | undefined;
  if (options.engine && options.engine !== 'sqlite') database = await createTestDatabase(options.engine);
  const raw = {
    server: {
      address: '127.0.0.1:0',
      data_dir: dataDir,
      key_seed: 'gateway-test-seed',
      auth_file: authFile,
      client_login_wait: 0,
      ...options.server,
    },
    api: { address: '127.0.0.1:0', auth: API_USER.join(':'), user_login_wait: 0, ...options.api },
    database: database ? database.settings : { db_type: 'sqlite' },
  };
  const config = resolveConfigPaths(svcdConfigSchema.parse(raw), join(dataDir, 'svcd.conf'));
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const start = () =>
    startServer(config, logger, {
      ...(options.tuning ? { agentLink: options.tuning } : {}),
      ...(options.concurrentJobWindow ? { concurrentJobWindow: options.concurrentJobWindow } : {}),
      ...(options.memoryReclaim ? { memoryReclaim: options.memoryReclaim } : {}),
    });

  let server = await start();
  const handle: GatewayServer = {
    server,
    api: createApiClient(server.apiUrl ?? ''),
    config,
    logs,
    url: `ws://127.0.0.1:${server.clientPort}`,
    agent: (authId = 'agents-a') => ({
      url: handle.url,
      authId,
      password: CLIENT_AUTH[authId],
      fingerprint: server.fingerprint,
    }),
    async restart() {
      await server.close();
      server = await start();
      Object.assign(handle, {
        server,
        api: createApiClient(server.apiUrl ?? ''),
        url: `ws://127.0.0.1:${server.clientPort}`,
      });
    },
    async stop() {
      await server.close();
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Polls `check` until it returns a value other than undefined/false. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The record of one client from GET /clients/{id}, or undefined on 404. */
export async function clientRecord(
  t: GatewayServer,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  const res = await t.api.get(`/clients/${encodeURIComponent(id)}`, { auth: AUTH });
  return res.status === 200 ? (res.json.data as Record<string, unknown>) : undefined;
}

export const logsWith = (t: GatewayServer, msg: string): LogLine[] => t.logs.filter((l) => l.msg === msg);
