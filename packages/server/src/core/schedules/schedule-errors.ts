import { AppError, ERROR_CODES } from '@svc/protocol';

/** The errors of the schedules API, each with its kind (→ status) and stable code. */
export const scheduleErrors = {
  notFound: (id: string) =>
    new AppError(
      'not_found',
      ERROR_CODES.scheduleNotFound,
      `Schedule '${id}' not found`,
      'GET /schedules lists the schedules with their ids',
    ),
  badCron: (problem: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `schedule: ${problem}`,
      'five fields: minute hour day-of-month month day-of-week, e.g. "*/5 * * * *" or "30 2 * * mon-fri"',
    ),
  neverFires: (cron: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `schedule: '${cron}' never fires`,
      'no date matches it (e.g. 30 February); check the day-of-month and month fields',
    ),
  badTimeZone: (timezone: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `timezone: '${timezone}' is not a known time zone`,
      'give an IANA time zone name such as "Europe/Berlin" or "America/New_York", or "UTC"',
    ),
};
