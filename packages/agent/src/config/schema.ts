import { z } from 'zod';
import { durationSchema, loadTomlConfig } from '@svc/platform';
import { parseFingerprint } from '../connection/fingerprint.js';
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

const loggingSection = z.strictObject({
  log_level: z.enum(LOG_LEVELS).default('info'),
  log_file: z.string().default(''),
});

export const agentConfigSchema = z.strictObject({
  client: clientSection.prefault({}),
  connection: connectionSection.prefault({}),
  logging: loggingSection.prefault({}),
});

export type AgentConfigFile = z.output<typeof agentConfigSchema>;

/** Reads and validates an agent config file; throws ConfigError naming every wrong key. */
export function loadAgentConfig(path: string): AgentConfigFile {
  return loadTomlConfig(path, agentConfigSchema, { exampleFile: EXAMPLE_CONFIG });
}
