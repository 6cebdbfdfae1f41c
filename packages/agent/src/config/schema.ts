import * as z from 'zod/mini';
import { durationSchema, loadTomlConfig, parsedString, rejectValue } from '@svc/platform';
import { parseFingerprint } from '../connection/fingerprint.js';
import {
  DEFAULT_ALLOW,
  DEFAULT_DENY,
  DEFAULT_ORDER,
  DEFAULT_SEND_BACK_LIMIT,
  MAX_SEND_BACK_LIMIT,
  compileFilter,
} from '../exec/exec-settings.js';
import { parseAllowEntry } from '../tunnels/tunnel-allowed.js';
import { parseAuth } from './auth.js';
import { toWebSocketUrl } from './server-url.js';

export const EXAMPLE_CONFIG = 'svc.example.conf';
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type AgentLogLevel = (typeof LOG_LEVELS)[number];

const atLeastOneSecond = (ms: number) => ms >= 1000;

const clientSection = z.strictObject({
  server: z.optional(parsedString(toWebSocketUrl)),
  auth: z.optional(parsedString(parseAuth)),
  id: z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
  name: z.optional(z.string().check(z.maxLength(200))),
  tags: z._default(z.array(z.string().check(z.minLength(1), z.maxLength(256))).check(z.maxLength(100)), []),
  labels: z._default(
    z.record(z.string().check(z.minLength(1), z.maxLength(256)), z.string().check(z.maxLength(1024)), {
      error: (issue) =>
        issue.code === 'invalid_type' ? 'expected a table such as { env = "prod" }' : undefined,
    }),
    {},
  ),
  fingerprint: z.optional(parsedString(parseFingerprint)),
  tls_ca: z.optional(z.string().check(z.minLength(1))),
  data_dir: z.optional(z.string().check(z.minLength(1))),
  tunnel_allowed: z._default(z.array(parsedString(validAllowEntry)), []),
});

function validAllowEntry(text: string): string {
  parseAllowEntry(text);
  return text;
}

/** A duration of at least a second, `fallback` when the key is absent. */
const interval = (fallback: string) =>
  z.prefault(durationSchema.check(z.refine(atLeastOneSecond, 'must be at least 1s')), fallback);

const connectionSection = z.strictObject({
  keepalive_interval: interval('20s'),
  max_retry_interval: interval('5m'),
});

const filterList = (defaults: string[]) =>
  z._default(z.array(parsedString(compileFilter)), () => defaults.map(compileFilter));

const orderSchema = z.pipe(
  z.array(z.string()),
  z.transform((order: string[], ctx) => {
    if (order.length === 2 && order[0] === 'allow' && order[1] === 'deny') return ['allow', 'deny'] as const;
    if (order.length === 2 && order[0] === 'deny' && order[1] === 'allow') return ['deny', 'allow'] as const;
    return rejectValue(ctx, order, 'must be ["allow", "deny"] or ["deny", "allow"]');
  }),
);

const remoteCommandsSection = z.strictObject({
  enabled: z._default(z.boolean(), true),
  allow: filterList(DEFAULT_ALLOW),
  deny: filterList(DEFAULT_DENY),
  order: z._default(orderSchema, DEFAULT_ORDER),
  send_back_limit: z._default(z.int().check(z.gte(0), z.lte(MAX_SEND_BACK_LIMIT)), DEFAULT_SEND_BACK_LIMIT),
});

const remoteScriptsSection = z.strictObject({
  enabled: z._default(z.boolean(), true),
});

/** alias = "path"; OpenRPort's ["path", "input-encoding", "output-encoding"] form is read for its path. */
const interpreterAlias = z.pipe(
  z.union([z.string().check(z.minLength(1)), z.tuple([z.string().check(z.minLength(1))], z.string())]),
  z.transform((value: string | [string, ...string[]]) => (typeof value === 'string' ? value : value[0])),
);

const loggingSection = z.strictObject({
  log_level: z._default(z.enum(LOG_LEVELS), 'info'),
  log_file: z._default(z.string(), ''),
});

export const agentConfigSchema = z.strictObject({
  client: z.prefault(clientSection, {}),
  connection: z.prefault(connectionSection, {}),
  logging: z.prefault(loggingSection, {}),
  'remote-commands': z.prefault(remoteCommandsSection, {}),
  'remote-scripts': z.prefault(remoteScriptsSection, {}),
  'interpreter-aliases': z._default(z.record(z.string().check(z.minLength(1)), interpreterAlias), {}),
});

export type AgentConfigFile = z.output<typeof agentConfigSchema>;

/** Reads and validates an agent config file; throws ConfigError naming every wrong key. */
export function loadAgentConfig(path: string): AgentConfigFile {
  return loadTomlConfig(path, agentConfigSchema, { exampleFile: EXAMPLE_CONFIG });
}
