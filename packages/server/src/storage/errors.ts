import { AppError, ERROR_CODES } from '@svc/protocol';

/**
 * Driver error classification for the three engines, in one place.
 * Drivers report errors as plain `Error`s carrying `code` (pg: SQLSTATE; mysql2: ER_* / Node errno codes;
 * better-sqlite3: SQLITE_* extended codes) and sometimes `errno`; Node's happy-eyeballs connect wraps
 * several attempts in an `AggregateError`.
 */

/** Node socket codes and driver codes that mean "the server cannot be reached or went away". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  // mysql2
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_TOO_MANY_USER_CONNECTIONS',
  // PostgreSQL: operator intervention (57P01 admin shutdown, 57P02 crash, 57P03 cannot connect now),
  // too many connections. Class 08 (connection exceptions) is matched by prefix below.
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // SQLite: locked by another process past busy_timeout, or the file/disk went away.
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_CANTOPEN',
  'SQLITE_FULL',
]);

/** Messages of errors the drivers raise without a code. */
const UNAVAILABLE_MESSAGES = [
  /connection terminated/i, // pg: "Connection terminated unexpectedly", "... due to connection timeout"
  /timeout exceeded when trying to connect/i, // pg Pool
  /client has encountered a connection error/i, // pg
  /cannot use a pool after calling end/i, // pg Pool after close()
  /connection is in closed state/i, // mysql2
  /pool is closed/i, // mysql2
  /database connection is not open/i, // better-sqlite3 after close()
  /driver has already been destroyed/i, // Kysely after destroy()
];

interface DriverErrorFields {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
}

const fieldsOf = (err: unknown): DriverErrorFields => (typeof err === 'object' && err !== null ? err : {});

const codeOf = (err: unknown): string => {
  const { code } = fieldsOf(err);
  return typeof code === 'string' ? code : '';
};

const messageOf = (err: unknown): string => {
  const { message } = fieldsOf(err);
  return typeof message === 'string' ? message : String(err);
};

/** True when the error means the database cannot be reached (network, shutdown, lock timeout, closed pool). */
export function isUnavailableError(err: unknown): boolean {
  if (err instanceof AggregateError && err.errors.some(isUnavailableError)) return true;
  const code = codeOf(err);
  if (UNAVAILABLE_CODES.has(code)) return true;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR')) return true;
  if (/^08[0-9A-Z]{3}$/.test(code)) return true; // PostgreSQL class 08: connection exception
  const message = messageOf(err);
  return UNAVAILABLE_MESSAGES.some((re) => re.test(message));
}

/** True for a unique or primary-key violation on any of the three engines. */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return (
    code === '23505' || // PostgreSQL unique_violation
    code === 'ER_DUP_ENTRY' || // MySQL / MariaDB (errno 1062)
    fieldsOf(err).errno === 1062 ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/** True when the engine chose this transaction as a deadlock victim: it may simply be run again. */
export function isDeadlock(err: unknown): boolean {
  const code = codeOf(err);
  return (
    code === '40P01' || // PostgreSQL deadlock_detected
    code === 'ER_LOCK_DEADLOCK' || // MySQL / MariaDB (errno 1213)
    fieldsOf(err).errno === 1213
  );
}

/** One short line describing a driver error: its code and first message line, never empty. */
export function describeDriverError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    return [...new Set(err.errors.map(describeDriverError))].join('; ');
  }
  const code = codeOf(err);
  const message = (messageOf(err).split('\n')[0] ?? '').trim();
  const text =
    message === ''
      ? code || 'unknown error'
      : code && !message.includes(code)
        ? `${code}: ${message}`
        : message;
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

export const storageUnavailable = (reason: string): AppError =>
  new AppError('unavailable', ERROR_CODES.storageUnavailable, 'The database is unavailable', reason);

/**
 * Runs a storage operation and turns "database unreachable" driver errors into an AppError of kind
 * `unavailable` (HTTP 503). AppErrors and any other error pass through unchanged.
 */
export async function withStorageErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asStorageError(err);
  }
}

/** What withStorageErrors throws for `err`, for synchronous driver calls (which throw Errors). */
export function asStorageError(err: unknown): Error {
  if (isUnavailableError(err) && !(err instanceof AppError))
    return storageUnavailable(describeDriverError(err));
  return err instanceof Error ? err : new Error(String(err));
}
