import { z } from 'zod';
import { durationSchema, loadTomlConfig } from '@svc/platform';
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

/** A string checked by a parser that throws with a message; the output is the parser's result. */
function parsedString<T>(parse: (text: string) => T) {
  return z.string().transform((text, ctx) => {
    try {
      return parse(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', input: text, message: (error as Error).message });
      return z.NEVER;
    }
  });
}

const atLeastOneSecond = (ms: number) => ms >= 1000;

const clientSection = z.strictObject({
  server: parsedString(toWebSocketUrl).optional(),
  auth: parsedString(parseAuth).optional(),
  id: z.string().min(1).max(100).optional(),
  name: z.string().max(200).optional(),
  tags: z.array(z.string().min(1).max(256)).max(100).default([]),
  labels: z
    .record(z.string().min(1).max(256), z.string().max(1024), {
      error: (issue) =>
        issue.code === 'invalid_type' ? 'expected a table such as { env = "prod" }' : undefined,
    })
    .default({}),
  fingerprint: parsedString(parseFingerprint).optional(),
  tls_ca: z.string().min(1).optional(),
  data_dir: z.string().min(1).optional(),
  tunnel_allowed: z.array(parsedString(validAllowEntry)).default([]),
});

function validAllowEntry(text: string): string {
  parseAllowEntry(text);
  return text;
}

const connectionSection = z.strictObject({
  keepalive_interval: durationSchema.refine(atLeastOneSecond, 'must be at least 1s').prefault('20s'),
  max_retry_interval: durationSchema.refine(atLeastOneSecond, 'must be at least 1s').prefault('5m'),
});

const filterList = (defaults: string[]) =>
  z.array(parsedString(compileFilter)).default(() => defaults.map(compileFilter));

const remoteCommandsSection = z.strictObject({
  enabled: z.boolean().default(true),
  allow: filterList(DEFAULT_ALLOW),
  deny: filterList(DEFAULT_DENY),
  order: z
    .array(z.string())
    .transform((order, ctx) => {
      if (order.length === 2 && order[0] === 'allow' && order[1] === 'deny')
        return ['allow', 'deny'] as const;
      if (order.length === 2 && order[0] === 'deny' && order[1] === 'allow')
        return ['deny', 'allow'] as const;
      ctx.addIssue({
        code: 'custom',
        input: order,
        message: 'must be ["allow", "deny"] or ["deny", "allow"]',
      });
      return z.NEVER;
    })
    .default(DEFAULT_ORDER),
  send_back_limit: z.int().min(0).max(MAX_SEND_BACK_LIMIT).default(DEFAULT_SEND_BACK_LIMIT),
});

const remoteScriptsSection = z.strictObject({
  enabled: z.boolean().default(true),
});

/** alias = "path"; OpenRPort's ["path", "input-encoding", "output-encoding"] form is read for its path. */
const interpreterAlias = z
  .union([z.string().min(1), z.tuple([z.string().min(1)], z.string())])
  .transform((value) => (typeof value === 'string' ? value : value[0]));

const loggingSection = z.strictObject({
  log_level: z.enum(LOG_LEVELS).default('info'),
  log_file: z.string().default(''),
});

export const agentConfigSchema = z.strictObject({
  client: clientSection.prefault({}),
  connection: connectionSection.prefault({}),
  logging: loggingSection.prefault({}),
  'remote-commands': remoteCommandsSection.prefault({}),
  'remote-scripts': remoteScriptsSection.prefault({}),
  'interpreter-aliases': z.record(z.string().min(1), interpreterAlias).default({}),
});

export type AgentConfigFile = z.output<typeof agentConfigSchema>;

/** Reads and validates an agent config file; throws ConfigError naming every wrong key. */
export function loadAgentConfig(path: string): AgentConfigFile {
  return loadTomlConfig(path, agentConfigSchema, { exampleFile: EXAMPLE_CONFIG });
}
