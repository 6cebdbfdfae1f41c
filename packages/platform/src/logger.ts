import { pino } from 'pino';

export type Logger = pino.Logger;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface LoggerOptions {
  level: LogLevel;
  /** Append JSON lines to this file (its directory is created); stdout when absent or empty. */
  file?: string | undefined;
  name: string;
}

/** A pino logger writing one JSON object per line, with ISO timestamps and level names. */
export function createLogger(options: LoggerOptions): Logger {
  const destination = options.file
    ? pino.destination({ dest: options.file, append: true, mkdir: true, sync: true })
    : pino.destination({ dest: 1, sync: true });
  return pino(
    {
      name: options.name,
      level: options.level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
