import { dayMatches, type CronExpression } from './cron.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Larger than any daylight-saving shift, so a jump by wall-clock arithmetic never lands past a firing. */
const MARGIN = 3 * HOUR;
/** A cron expression that does not fire within this horizon never fires (e.g. 30 February). */
const HORIZON = 8 * 366 * 24 * HOUR;

/** Wall-clock fields of an instant in a time zone. */
interface LocalTime {
  year: number;
  /** 1-12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  /** 0 = Sunday */
  weekday: number;
  /** The wall-clock time read as if it were UTC, in epoch milliseconds; minus the instant = the zone's offset. */
  wall: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether the runtime knows the IANA time zone name (e.g. `Europe/Berlin`, `UTC`). */
export function isTimeZone(timeZone: string): boolean {
  if (timeZone === '') return false;
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

function fromWall(wall: number): LocalTime {
  const d = new Date(wall);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    weekday: d.getUTCDay(),
    wall,
  };
}

/** The wall-clock time of a minute-aligned instant in the zone. */
function localAt(ms: number, timeZone: string): LocalTime {
  if (timeZone === 'UTC') return fromWall(ms);
  const parts: Record<string, number> = {};
  for (const part of formatterOf(timeZone).formatToParts(ms))
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
  );
  return fromWall(wall);
}

const offsetAt = (ms: number, timeZone: string): number => localAt(ms, timeZone).wall - ms;

function matches(cron: CronExpression, local: LocalTime): boolean {
  return (
    cron.month.has(local.month) &&
    dayMatches(cron, local.day, local.weekday) &&
    cron.hour.has(local.hour) &&
    cron.minute.has(local.minute)
  );
}

/**
 * The clock jumped forward at `t` (daylight saving starts): does a wall-clock time it skipped match? Those
 * firings happen at `t`, the first instant after the gap.
 */
function skippedMatch(cron: CronExpression, t: number, local: LocalTime, timeZone: string): boolean {
  const before = offsetAt(t - MINUTE, timeZone);
  const offset = local.wall - t;
  if (offset <= before) return false;
  for (let wall = local.wall - (offset - before); wall < local.wall; wall += MINUTE)
    if (matches(cron, fromWall(wall))) return true;
  return false;
}

/** The clock went back (daylight saving ends) and `t`'s wall-clock time already happened once. */
function repeatedWallTime(t: number, local: LocalTime, timeZone: string): boolean {
  const offset = local.wall - t;
  const earlier = offsetAt(t - MARGIN, timeZone);
  if (earlier <= offset) return false;
  const first = local.wall - earlier;
  return first < t && offsetAt(first, timeZone) === earlier;
}

/** At least to the next hour; towards `wall` (a wall-clock time) but never past it. */
function towards(t: number, local: LocalTime, wall: number): number {
  const nextHour = t + (60 - local.minute) * MINUTE;
  return Math.max(nextHour, wall - (local.wall - t) - MARGIN);
}

/**
 * The first instant after `after` at which the cron expression fires in the time zone, or null if it never does.
 *
 * Daylight saving, as cronie handles it: an expression with a fixed minute and hour (e.g. `30 2 * * *`) fires once
 * per matching wall-clock time: a time skipped when the clock jumps forward fires at the first instant after the
 * jump, and a time that happens twice when the clock goes back fires only the first time. An expression with `*`
 * in the minute or hour field (e.g. `*∕5 * * * *`, `0 * * * *`) follows real time: it fires at each matching
 * wall-clock time that exists, so an hour repeated by the clock going back fires again.
 */
export function nextFiring(cron: CronExpression, timeZone: string, after: Date): Date | null {
  const fixedTime = !cron.minute.wildcard && !cron.hour.wildcard;
  const start = Math.floor(after.getTime() / MINUTE) * MINUTE + MINUTE;
  let t = start;
  while (t - start < HORIZON) {
    const local = localAt(t, timeZone);
    if (fixedTime && timeZone !== 'UTC' && skippedMatch(cron, t, local, timeZone)) return new Date(t);
    if (!cron.month.has(local.month)) {
      t = towards(t, local, Date.UTC(local.year, local.month, 1));
    } else if (!dayMatches(cron, local.day, local.weekday)) {
      t = towards(t, local, Date.UTC(local.year, local.month - 1, local.day + 1));
    } else if (!cron.hour.has(local.hour)) {
      t += (60 - local.minute) * MINUTE;
    } else {
      const minute = cron.minute.values.find((m) => m >= local.minute);
      if (minute === undefined) t += (60 - local.minute) * MINUTE;
      else if (minute > local.minute) t += (minute - local.minute) * MINUTE;
      else if (fixedTime && timeZone !== 'UTC' && repeatedWallTime(t, local, timeZone)) t += MINUTE;
      else return new Date(t);
    }
  }
  return null;
}
