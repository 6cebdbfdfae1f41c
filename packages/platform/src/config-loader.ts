import { readFileSync } from 'node:fs';
import { parse, TomlError } from 'smol-toml';
import * as z from 'zod/mini';
import './zod-english.js';
import { describeValue } from './values.js';

export interface ConfigLoadOptions {
  /** Name of the example file that lists every key, mentioned in "unknown key" hints. */
  exampleFile?: string;
  /** Keys of another product's config files that are dropped with a warning instead of failing the load. */
  tolerated?: ToleratedKeys;
  /** Receives one `[section] key: ...` line per tolerated key that was dropped. */
  onWarning?: (message: string) => void;
}

/** Sections and keys a config written for another product may carry; keys the schema knows are never dropped. */
export interface ToleratedKeys {
  /** Who defines them, e.g. "OpenRPort". */
  product: string;
  sections: readonly string[];
  keys: Readonly<Record<string, readonly string[]>>;
}

/** Every problem found in a configuration, one `[section] key: what is wrong` line each. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly problems: string[],
    readonly source?: string,
    detail?: string,
  ) {
    const count = `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
    const head =
      source === undefined
        ? `Invalid configuration (${count}):`
        : `Invalid configuration in ${source} (${count}):`;
    super([head, ...problems, ...(detail ? ['', detail] : [])].join('\n'));
  }
}

/**
 * One unusable setting found when it is used rather than when the file is parsed (a certificate or CA file that
 * is missing or broken). Its message is the problem alone, one line naming the setting.
 */
export class SettingError extends ConfigError {
  constructor(problem: string) {
    super([problem]);
    this.message = problem;
  }
}

const TYPE_NAMES: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'a boolean (true or false)',
  array: 'a list',
  object: 'a table',
  date: 'a date',
};

type LooseDef = { format?: string; checks?: { _zod: { def: { format?: string } } }[] };

/** z.int() and z.number().int() report a string input as "expected number"; say "an integer" instead. */
function expectsInteger(inst: unknown): boolean {
  const def = (inst as { _zod?: { def?: LooseDef } } | undefined)?._zod?.def;
  const formats = [def?.format, ...(def?.checks ?? []).map((check) => check._zod.def.format)];
  return formats.some((format) => format === 'safeint' || format === 'int32' || format === 'uint32');
}

// Key names whose values must never be echoed into logs.
const SECRET_KEY = /password|secret|seed|^auth$/;

/** Zod error map producing the plain messages used in config problems; schema-level messages still win. */
export const configErrorMap: z.core.$ZodErrorMap = (issue) => {
  const last = issue.path?.at(-1);
  const got = describeValue(issue.input, typeof last === 'string' && SECRET_KEY.test(last));
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'missing; this key is required';
      if (issue.expected === 'number' && expectsInteger(issue.inst)) return `expected an integer, got ${got}`;
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}, got ${got}`;
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${String(issue.values[0])}, got ${got}`
        : `must be one of ${issue.values.map(String).join(', ')} (got ${got})`;
    case 'too_small':
      if (issue.origin === 'string')
        return issue.minimum === 1
          ? 'must not be empty (remove the key instead)'
          : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array')
        return `must list at least ${issue.minimum} item${issue.minimum === 1 ? '' : 's'}`;
      return `must be ${issue.inclusive ? 'at least' : 'greater than'} ${issue.minimum}, got ${got}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must list at most ${issue.maximum} items`;
      return `must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}, got ${got}`;
    case 'invalid_union':
      return `has an unsupported form, got ${got}`;
    default:
      return undefined;
  }
};

/** A key as TOML writes it: bare when it may be, else quoted, so a name holding `]` or blanks stays readable. */
const tomlKey = (key: PropertyKey): string => {
  const name = String(key);
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
};

/** Where an issue sits: `[section] key`, `[section] key[1]`, `[section]`, or '' for the whole file. */
function location(path: readonly PropertyKey[]): string {
  const [section, key, ...rest] = path;
  if (section === undefined) return '';
  let out = `[${tomlKey(section)}]`;
  if (key !== undefined) out += ` ${tomlKey(key)}`;
  for (const part of rest) out += typeof part === 'number' ? `[${part}]` : `.${tomlKey(part)}`;
  return out;
}

function isTable(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** Turns zod issues into `[section] key: message` lines; unknown keys get one line each. */
export function formatZodIssues(
  issues: readonly z.core.$ZodIssue[],
  options: ConfigLoadOptions = {},
): string[] {
  const hint = options.exampleFile ? `check the spelling; see ${options.exampleFile}` : 'check the spelling';
  const lines: string[] = [];
  for (const issue of issues) {
    const where = location(issue.path);
    if (issue.code !== 'unrecognized_keys') {
      lines.push(where ? `${where}: ${issue.message}` : issue.message);
      continue;
    }
    const input: unknown = issue.input;
    for (const key of issue.keys) {
      if (issue.path.length > 0) {
        lines.push(`${location([...issue.path, key])}: unknown key (${hint})`);
      } else if (isTable((input as Record<string, unknown> | undefined)?.[key])) {
        lines.push(`[${tomlKey(key)}]: unknown section (${hint})`);
      } else {
        lines.push(`${tomlKey(key)}: unknown key outside any section (move it under its [section]; ${hint})`);
      }
    }
  }
  return lines;
}

/** Removes the tolerated sections and keys from parsed TOML (in place), reporting each one. */
export function dropToleratedKeys(
  data: unknown,
  tolerated: ToleratedKeys,
  onWarning: (message: string) => void = () => undefined,
): void {
  if (!isTable(data)) return;
  const root = data as Record<string, unknown>;
  const ignored = `${tolerated.product} setting not implemented in this version; ignored`;
  for (const [name, value] of Object.entries(root)) {
    if (!isTable(value)) continue;
    if (tolerated.sections.includes(name)) {
      delete root[name];
      onWarning(`[${name}]: ${ignored}`);
      continue;
    }
    const section = value as Record<string, unknown>;
    for (const key of tolerated.keys[name] ?? []) {
      if (!(key in section)) continue;
      delete section[key];
      onWarning(`[${name}] ${key}: ${ignored}`);
    }
  }
}

/** Validates already-parsed data against a schema; throws ConfigError listing every problem. */
export function validateConfig<S extends z.core.$ZodType>(
  data: unknown,
  schema: S,
  options: ConfigLoadOptions & { source?: string } = {},
): z.output<S> {
  const result = z.safeParse(schema, data, { reportInput: true, error: configErrorMap });
  if (result.success) return result.data;
  throw new ConfigError(formatZodIssues(result.error.issues, options), options.source);
}

/** Parses TOML text and validates it; `source` names the file in messages. */
export function parseTomlConfig<S extends z.core.$ZodType>(
  text: string,
  schema: S,
  options: ConfigLoadOptions & { source?: string } = {},
): z.output<S> {
  let data: unknown;
  try {
    data = parse(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const reason = error.message.split('\n')[0]?.replace(/^Invalid TOML document: /, '') ?? 'syntax error';
    const problem = `line ${error.line}, column ${error.column}: invalid TOML: ${reason}`;
    throw new ConfigError([problem], options.source, error.codeblock.trimEnd());
  }
  if (options.tolerated) dropToleratedKeys(data, options.tolerated, options.onWarning);
  return validateConfig(data, schema, options);
}

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'the file does not exist',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory, not a file',
};

/** Why a file could not be read, in words ("the file does not exist", "permission denied", ...). */
export function readErrorReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  return READ_ERRORS[code] ?? (error as Error).message;
}

/** Reads a TOML file and validates it against a zod schema; throws ConfigError listing every problem. */
export function loadTomlConfig<S extends z.core.$ZodType>(
  filePath: string,
  schema: S,
  options: ConfigLoadOptions = {},
): z.output<S> {
  let text: string;
  try {
    text = readFileSync(filePath, 'utf8');
  } catch (error) {
    throw new ConfigError([`cannot read config file ${filePath}: ${readErrorReason(error)}`], filePath);
  }
  return parseTomlConfig(text, schema, { ...options, source: filePath });
}
