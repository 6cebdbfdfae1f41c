import {
  AppError,
  ERROR_CODES,
  MAX_JOB_ENV_BYTES,
  isVaultReference,
  type JobRun,
  type RunEnv,
  type VaultReference,
} from '@svc/protocol';
import type { VaultCaller } from '../vault/vault-service.js';

/** Who asked for a run: its vault references are resolved with this user's rights (required_group). */
export type RunRequester = VaultCaller;

/** Where vault references are looked up (VaultService). */
export interface RunSecretSource {
  valueByKey(caller: VaultCaller, key: string, clientId?: string): Promise<string>;
}

/** What a run's `env` becomes in its job.run: the values, and which of them are secrets (name → label). */
export type ResolvedEnv = Pick<JobRun, 'env' | 'redact'>;

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

const envErrors = {
  withQueue: () =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      'env cannot be combined with queue_ttl',
      'a queued job is stored until its client connects, and svcd never stores environment values or secrets; ' +
        'run it without queue_ttl',
    ),
  noRequester: () =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      'env: vault references cannot be used here',
      'svcd cannot tell whose vault rights apply to this run',
    ),
  nulInValue: (name: string, key: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `env.${name}: the value of vault entry '${key}' contains a NUL character`,
      'no environment variable can hold one',
    ),
  tooLarge: () =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `env: the names and values (vault values included) take more than ${MAX_JOB_ENV_BYTES} bytes`,
      'pass large data in the script or a file instead',
    ),
};

/**
 * Resolves a run's `env` for `requester` just before it is dispatched: plain values as they are, each
 * `{"vault": key}` to that entry's value (the client's own entry for a run on one client, else the shared one).
 * Rejects before anything runs: 409 vault locked, 403 required_group, 404 no such entry. Nothing is stored.
 */
export async function resolveRunEnv(
  env: RunEnv | undefined,
  options: {
    source: RunSecretSource | undefined;
    requester: RunRequester | undefined;
    clientId?: string;
    queued?: boolean;
  },
): Promise<ResolvedEnv> {
  if (env === undefined || Object.keys(env).length === 0) return {};
  if (options.queued) throw envErrors.withQueue();
  const values: Record<string, string> = {};
  const redact: Record<string, string> = {};
  let bytes = 0;
  for (const [name, given] of Object.entries(env)) {
    let value: string;
    if (isVaultReference(given)) {
      const { source, requester } = options;
      if (!source || !requester) throw envErrors.noRequester();
      value = await source.valueByKey(requester, given.vault, options.clientId);
      if (value.includes('\u0000')) throw envErrors.nulInValue(name, given.vault);
      redact[name] = given.vault;
    } else value = given;
    values[name] = value;
    bytes += utf8Bytes(name) + utf8Bytes(value);
  }
  if (bytes > MAX_JOB_ENV_BYTES) throw envErrors.tooLarge();
  return Object.keys(redact).length === 0 ? { env: values } : { env: values, redact };
}

/**
 * What a run record keeps of its `env`: the vault references (name → key), which a rerun resolves again, and the
 * names of plain values (their values are never stored). Empty when the run had no env.
 */
export function storedEnvOf(env: RunEnv | undefined): {
  env?: Record<string, VaultReference>;
  env_plain?: string[];
} {
  const references: Record<string, VaultReference> = {};
  const plain: string[] = [];
  for (const [name, given] of Object.entries(env ?? {})) {
    if (isVaultReference(given)) references[name] = { vault: given.vault };
    else plain.push(name);
  }
  return {
    ...(Object.keys(references).length === 0 ? {} : { env: references }),
    ...(plain.length === 0 ? {} : { env_plain: plain }),
  };
}
