import { dirname, resolve } from 'node:path';
import { parseFingerprint } from '../connection/fingerprint.js';
import { defaultExecSettings, type ExecSettings } from '../exec/exec-settings.js';
import { parseAuth, type Credentials } from './auth.js';
import { parseLabel } from './labels.js';
import type { AgentConfigFile, AgentLogLevel } from './schema.js';
import { toWebSocketUrl } from './server-url.js';

/** Command-line flags as commander delivers them. */
export interface CliFlags {
  config?: string;
  auth?: string;
  id?: string;
  name?: string;
  tag?: string[];
  label?: string[];
  fingerprint?: string;
  tlsCa?: string;
  dataDir?: string;
  logLevel?: AgentLogLevel;
}

export interface SettingsInput {
  serverArg?: string | undefined;
  flags: CliFlags;
  file?: { config: AgentConfigFile; path: string } | undefined;
  /** The SVC_AUTH environment variable, read by the caller. */
  envAuth?: string | undefined;
  cwd: string;
  hostname: string;
}

export type CredentialsSource = '--auth' | '[client] auth' | 'SVC_AUTH';

/** Everything the agent runs with, after merging flags over the config file over defaults. */
export interface AgentSettings {
  /** ws:// or wss:// URL of svcd's agent listener. */
  serverUrl: string;
  credentials: Credentials;
  credentialsSource: CredentialsSource;
  /** Configured id; undefined means the id generated once and kept in dataDir. */
  clientId: string | undefined;
  name: string;
  tags: string[];
  labels: Record<string, string>;
  /** Lower-case MD5 colon hex (or its start) that svcd's host key must match; undefined = accept any. */
  fingerprint: string | undefined;
  /** PEM file of the CAs trusted for wss:// instead of the system's, and the setting that named it. */
  tlsCaFile: { path: string; setting: '--tls-ca' | '[client] tls_ca' } | undefined;
  dataDir: string;
  tunnelAllowed: string[];
  keepaliveIntervalMs: number;
  maxRetryIntervalMs: number;
  logLevel: AgentLogLevel;
  logFile: string;
  /** [remote-commands], [remote-scripts], [interpreter-aliases]. */
  exec: ExecSettings;
}

/** A wrong command line or missing setting; main prints the message and exits 1. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(readonly problems: string[]) {
    super(
      problems.length === 1
        ? (problems[0] ?? '')
        : [`${problems.length} problems:`, ...problems.map((p) => `  ${p}`)].join('\n'),
    );
  }
}

export const DEFAULT_DATA_DIR = './svc-data';
const MAX_TAGS = 100;

/**
 * Merges command-line flags over config-file values over defaults. Credentials come from `--auth`, then
 * `[client] auth`, then SVC_AUTH. Relative paths from the file are taken from the file's folder; others from cwd.
 */
export function resolveSettings(input: SettingsInput): AgentSettings {
  const { flags, file } = input;
  const client = file?.config.client;
  const problems: string[] = [];
  const check = <T>(label: string, parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (error) {
      problems.push(`${label}: ${(error as Error).message}`);
      return undefined;
    }
  };

  const { serverArg } = input;
  const {
    id: idFlag,
    name: nameFlag,
    tag: tagFlags = [],
    label: labelFlags = [],
    fingerprint: fpFlag,
  } = flags;
  const serverUrl =
    serverArg !== undefined ? check('server address', () => toWebSocketUrl(serverArg)) : client?.server;
  if (serverArg === undefined && serverUrl === undefined)
    problems.push(
      'no server: pass the svcd address (svc http://host:8080) or set server in [client] of the config file',
    );
  const credentials = resolveCredentials(input, check, problems);
  const id = idFlag !== undefined ? check('--id', () => checkLength(idFlag, 1, 100)) : client?.id;
  const name = nameFlag !== undefined ? check('--name', () => checkLength(nameFlag, 0, 200)) : client?.name;
  const tags = tagFlags.length > 0 ? check('--tag', () => checkTags(tagFlags)) : client?.tags;
  const labels =
    labelFlags.length > 0
      ? check('--label', () => Object.fromEntries(labelFlags.map(parseLabel)))
      : client?.labels;
  const fingerprint =
    fpFlag !== undefined ? check('--fingerprint', () => parseFingerprint(fpFlag)) : client?.fingerprint;

  const fileDir = file ? dirname(resolve(input.cwd, file.path)) : input.cwd;
  const tlsCaFile =
    flags.tlsCa !== undefined
      ? { path: resolve(input.cwd, flags.tlsCa), setting: '--tls-ca' as const }
      : client?.tls_ca !== undefined
        ? { path: resolve(fileDir, client.tls_ca), setting: '[client] tls_ca' as const }
        : undefined;
  if (tlsCaFile && serverUrl?.startsWith('ws:'))
    problems.push(
      `${tlsCaFile.setting}: a CA is only used for TLS; give the server address as https://host:port ` +
        `(it is ${serverUrl})`,
    );
  if (problems.length > 0 || serverUrl === undefined || credentials === undefined)
    throw new UsageError(problems);
  const logFile = file?.config.logging.log_file;
  return {
    serverUrl,
    credentials: credentials.value,
    credentialsSource: credentials.source,
    clientId: id,
    name: name || input.hostname,
    tags: tags ?? [],
    labels: labels ?? {},
    fingerprint,
    tlsCaFile,
    dataDir:
      flags.dataDir !== undefined
        ? resolve(input.cwd, flags.dataDir)
        : client?.data_dir !== undefined
          ? resolve(fileDir, client.data_dir)
          : resolve(input.cwd, DEFAULT_DATA_DIR),
    tunnelAllowed: client?.tunnel_allowed ?? [],
    keepaliveIntervalMs: file?.config.connection.keepalive_interval ?? 20_000,
    maxRetryIntervalMs: file?.config.connection.max_retry_interval ?? 300_000,
    logLevel: flags.logLevel ?? file?.config.logging.log_level ?? 'info',
    logFile: logFile ? resolve(fileDir, logFile) : '',
    exec: file ? execSettingsOf(file.config) : defaultExecSettings(),
  };
}

function execSettingsOf(config: AgentConfigFile): ExecSettings {
  const commands = config['remote-commands'];
  return {
    commandsEnabled: commands.enabled,
    scriptsEnabled: config['remote-scripts'].enabled,
    filters: { allow: commands.allow, deny: commands.deny, order: commands.order },
    sendBackLimit: commands.send_back_limit,
    interpreterAliases: config['interpreter-aliases'],
  };
}

function resolveCredentials(
  input: SettingsInput,
  check: <T>(label: string, parse: () => T) => T | undefined,
  problems: string[],
): { value: Credentials; source: CredentialsSource } | undefined {
  const { auth } = input.flags;
  const fromFile = input.file?.config.client.auth;
  const { envAuth } = input;
  let value: Credentials | undefined;
  let source: CredentialsSource;
  if (auth !== undefined) {
    source = '--auth';
    value = check('--auth', () => parseAuth(auth));
  } else if (fromFile !== undefined) {
    source = '[client] auth';
    value = fromFile;
  } else if (envAuth !== undefined && envAuth !== '') {
    source = 'SVC_AUTH';
    value = check('SVC_AUTH', () => parseAuth(envAuth));
  } else {
    problems.push(
      'no credentials: pass --auth <client-auth-id>:<password>, set auth in [client] of the config file, ' +
        'or set the SVC_AUTH environment variable',
    );
    return undefined;
  }
  return value && { value, source };
}

function checkLength(value: string, min: number, max: number): string {
  if (value.length < min) throw new Error('must not be empty');
  if (value.length > max) throw new Error(`must be at most ${max} characters`);
  return value;
}

function checkTags(tags: string[]): string[] {
  if (tags.length > MAX_TAGS) throw new Error(`at most ${MAX_TAGS} tags`);
  return tags.map((tag) => checkLength(tag, 1, 256));
}
