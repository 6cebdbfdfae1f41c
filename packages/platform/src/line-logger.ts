import { mkdirSync, openSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import type { LoggerOptions, LogLevel } from './logger.js';

/** The logging calls svc's agent makes; a pino logger has them too. */
export interface LineLogger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
}

interface LogFn {
  (msg: string): void;
  (fields: object, msg?: string): void;
}

const LEVELS: Record<Exclude<LogLevel, 'silent'>, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
};

interface SerializedError {
  type: string;
  message: string;
  stack: string | undefined;
  [key: string]: unknown;
}

/** As pino's `err` serializer: type, message and stack (with their causes), and the error's own fields. */
function serializeError(err: Error): SerializedError {
  const causes: Error[] = [];
  for (let c = err.cause; c instanceof Error && causes.length < 10; c = c.cause) causes.push(c);
  const out: SerializedError = {
    type: err.constructor?.name ?? err.name,
    message: [err, ...causes].map((e) => e.message).join(': '),
    stack: [err, ...causes].map((e) => e.stack).join('\ncaused by: '),
  };
  for (const [key, value] of Object.entries(err)) {
    if (out[key] === undefined && key !== 'cause')
      out[key] = value instanceof Error ? serializeError(value) : value;
  }
  return out;
}

/** Writes all of `line`, waiting out EAGAIN on a non-blocking pipe as pino's synchronous destination does. */
function writeAll(fd: number, line: string): void {
  let buffer = Buffer.from(line, 'utf8');
  while (buffer.length > 0) {
    try {
      buffer = buffer.subarray(writeSync(fd, buffer));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/**
 * One JSON object per line in pino's format (level name, ISO time, pid, hostname, name, the fields, msg), written
 * synchronously, without pino: the agent does not need its transports and worker threads, ~2 MB of an idle agent.
 */
export function createLineLogger(options: LoggerOptions): LineLogger {
  let fd = 1;
  if (options.file) {
    mkdirSync(dirname(options.file), { recursive: true });
    fd = openSync(options.file, 'a');
  }
  const threshold = options.level === 'silent' ? Infinity : LEVELS[options.level];
  const base = `"pid":${process.pid},"hostname":${JSON.stringify(hostname())},"name":${JSON.stringify(options.name)}`;
  const method = (level: keyof typeof LEVELS): LogFn => {
    if (LEVELS[level] < threshold) return () => {};
    return (first: string | object, msg?: string) => {
      const fields: Record<string, unknown> = typeof first === 'string' ? {} : { ...first };
      const text = typeof first === 'string' ? first : msg;
      if (fields.err instanceof Error) fields.err = serializeError(fields.err);
      if (text !== undefined) fields.msg = text;
      let rest: string;
      try {
        rest = JSON.stringify(fields).slice(1);
      } catch {
        rest = JSON.stringify({
          msg: text ?? fields.msg,
          fields_error: 'could not serialize the fields',
        }).slice(1);
      }
      const head = `{"level":"${level}","time":"${new Date().toISOString()}",${base}`;
      writeAll(fd, `${head}${rest === '}' ? '}' : `,${rest}`}\n`);
    };
  };
  return {
    fatal: method('fatal'),
    error: method('error'),
    warn: method('warn'),
    info: method('info'),
    debug: method('debug'),
    trace: method('trace'),
  };
}
