import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CronSyntaxError,
  dayMatches,
  parseCron,
  type CronExpression,
} from '../../src/core/schedules/cron.js';
import { isTimeZone, nextFiring } from '../../src/core/schedules/next-firing.js';

const MINUTE = 60_000;
const next = (expr: string, after: string, tz = 'UTC') =>
  nextFiring(parseCron(expr), tz, new Date(after))?.toISOString() ?? null;

/** Every firing from `after` up to `until`, each found from the one before. */
function firings(expr: string, tz: string, after: string, until: string): string[] {
  const cron = parseCron(expr);
  const out: string[] = [];
  let t: Date | null = new Date(after);
  while ((t = nextFiring(cron, tz, t)) && t.toISOString() < until) out.push(t.toISOString());
  return out;
}

const formats = new Map<string, Intl.DateTimeFormat>();
const formatOf = (timeZone: string) => {
  const format =
    formats.get(timeZone) ??
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
  formats.set(timeZone, format);
  return format;
};

/** Wall-clock fields by Intl (the reference; UTC by the Date getters, which is much faster). */
const wallOf = (ms: number, timeZone: string) => {
  if (timeZone === 'UTC') {
    const d = new Date(ms);
    return {
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      weekday: d.getUTCDay(),
    };
  }
  const parts = Object.fromEntries(
    formatOf(timeZone)
      .formatToParts(ms)
      .map((p) => [p.type, Number(p.value)]),
  ) as Record<string, number>;
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute);
  const d = new Date(wall);
  return {
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    weekday: d.getUTCDay(),
  };
};

/** The reference: every real minute in turn, matched on its wall-clock fields. */
function bruteForce(cron: CronExpression, tz: string, after: number, limitMinutes: number): number | null {
  let t = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  for (let i = 0; i < limitMinutes; i += 1, t += MINUTE) {
    const w = wallOf(t, tz);
    if (
      cron.month.has(w.month) &&
      dayMatches(cron, w.day, w.weekday) &&
      cron.hour.has(w.hour) &&
      cron.minute.has(w.minute)
    )
      return t;
  }
  return null;
}

describe('cron expressions', () => {
  it('reads numbers, ranges, steps, lists and names', () => {
    const cron = parseCron('*/15 9-17/4 1,15 jan-mar,DEC mon-fri');
    expect(cron.minute.values).toEqual([0, 15, 30, 45]);
    expect(cron.hour.values).toEqual([9, 13, 17]);
    expect(cron.dayOfMonth.values).toEqual([1, 15]);
    expect(cron.month.values).toEqual([1, 2, 3, 12]);
    expect(cron.dayOfWeek.values).toEqual([1, 2, 3, 4, 5]);
    expect(parseCron('5/20 * * * 7').minute.values).toEqual([5, 25, 45]);
    expect(parseCron('0 0 * * 7').dayOfWeek.values).toEqual([0]);
    expect(parseCron('@hourly').minute.values).toEqual([0]);
    expect(parseCron('  @Daily ').hour.values).toEqual([0]);
  });

  it.each([
    ['61 * * * *', 'minute: 61 is out of range 0-59'],
    ['* 24 * * *', 'hour: 24 is out of range 0-23'],
    ['* * 0 * *', 'day of month: 0 is out of range 1-31'],
    ['* * * 13 *', 'month: 13 is out of range 1-12'],
    ['* * * foo *', "month: 'foo' is not a number or a name"],
    ['* * *', 'expected 5 fields'],
    ['* * * * * *', 'got 6'],
    ['5-1 * * * *', 'minute: range 5-1 runs backwards'],
    ['*/0 * * * *', "minute: step '0' must be a whole number of at least 1"],
    ['1,,2 * * * *', 'minute: empty list entry'],
    ['1-2-3 * * * *', "minute: '1-2-3' is not a range a-b"],
    ['*/2/3 * * * *', "minute: '*/2/3' has more than one '/'"],
    ['@sometimes', "unknown macro '@sometimes'"],
    ['', 'expected 5 fields'],
  ])('refuses %j: %s', (expr, message) => {
    expect(() => parseCron(expr)).toThrow(CronSyntaxError);
    expect(() => parseCron(expr)).toThrow(message);
  });

  it('matches a day by either day field when both are restricted, by both when one starts with *', () => {
    // Friday the 13th or any Friday or any 13th: cron's OR rule.
    expect(next('0 0 13 * fri', '2026-11-28T00:00:00Z')).toBe('2026-12-04T00:00:00.000Z');
    expect(next('0 0 29 * sat', '2026-11-28T00:00:00Z')).toBe('2026-11-29T00:00:00.000Z');
    // */2 in day of month does not restrict by itself: odd days that are also Mondays.
    expect(next('0 0 */2 * mon', '2026-11-28T00:00:00Z')).toBe('2026-12-07T00:00:00.000Z');
  });
});

describe('next firing', () => {
  it('is the next matching minute, strictly after the given time', () => {
    expect(next('* * * * *', '2026-11-28T10:00:00Z')).toBe('2026-11-28T10:01:00.000Z');
    expect(next('* * * * *', '2026-11-28T10:00:59.999Z')).toBe('2026-11-28T10:01:00.000Z');
    expect(next('*/15 9-17 * * mon-fri', '2026-11-28T10:00:00Z')).toBe('2026-11-30T09:00:00.000Z');
    expect(next('0 0 1 1 *', '2026-11-28T10:00:00Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('0 0 29 2 *', '2026-11-28T10:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('0 12 * * *', '2026-11-28T10:00:00Z', 'Asia/Kolkata')).toBe('2026-11-29T06:30:00.000Z');
  });

  it('is null for an expression that never fires', () => {
    expect(next('0 0 30 2 *', '2026-11-28T10:00:00Z')).toBeNull();
    expect(next('0 0 31 4,6,9,11 *', '2026-11-28T10:00:00Z', 'Europe/Berlin')).toBeNull();
  });

  it('fires a fixed time skipped by the clock jumping forward at the first instant after the jump', () => {
    // Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z), so 02:30 does not exist that day.
    expect(firings('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00Z).
    expect(next('15 2 * * *', '2026-03-08T05:00:00Z', 'America/New_York')).toBe('2026-03-08T07:00:00.000Z');
  });

  it('fires a fixed time repeated by the clock going back only the first time', () => {
    // Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00Z), so 02:30 happens at 00:30Z and at 01:30Z.
    expect(firings('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('follows real time for an expression with * in the hour: the repeated hour fires again', () => {
    expect(firings('30 * * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', '2026-10-25T03:00:00Z')).toEqual([
      '2026-10-24T23:30:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:30:00.000Z',
    ]);
    // The skipped hour has no 02:30: one hour of real time from 01:30 CET to 03:30 CEST.
    expect(firings('30 * * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', '2026-03-29T02:00:00Z')).toEqual([
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
    ]);
  });

  it('knows time zones', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});

const field = (min: number, max: number) =>
  fc.oneof(
    fc.constant('*'),
    fc.integer({ min, max }).map(String),
    fc.integer({ min: 1, max: max - min }).map((n) => `*/${n}`),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
      .map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.uniqueArray(fc.integer({ min, max }), { minLength: 1, maxLength: 4 }).map((v) => v.join(',')),
  );
/** Expressions that fire at least every few days, so the brute-force reference stays short. */
const denseCron = fc
  .tuple(field(0, 59), field(0, 23), field(0, 6))
  .map(([m, h, dow]) => `${m} ${h} * * ${dow}`);
const instant = fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2028, 11, 31) });

describe('next firing, properties', () => {
  it('in UTC equals a minute-by-minute search', () => {
    fc.assert(
      fc.property(denseCron, instant, (expr, after) => {
        const cron = parseCron(expr);
        const got = nextFiring(cron, 'UTC', new Date(after))?.getTime() ?? null;
        expect(got).toBe(bruteForce(cron, 'UTC', after, 8 * 24 * 60));
      }),
      { numRuns: 150 },
    );
  });

  it('with * in the hour, in a zone with daylight saving, equals a search of real minutes by wall-clock fields', () => {
    const wildHour = fc.tuple(field(0, 59), field(0, 6)).map(([m, dow]) => `${m} * * * ${dow}`);
    // Around the 2026 changes in Berlin, where the clock jumps.
    const nearChange = fc.oneof(
      fc.integer({ min: Date.UTC(2026, 2, 27), max: Date.UTC(2026, 2, 30) }),
      fc.integer({ min: Date.UTC(2026, 9, 23), max: Date.UTC(2026, 9, 26) }),
    );
    fc.assert(
      fc.property(wildHour, nearChange, (expr, after) => {
        const cron = parseCron(expr);
        const got = nextFiring(cron, 'Europe/Berlin', new Date(after))?.getTime() ?? null;
        expect(got).toBe(bruteForce(cron, 'Europe/Berlin', after, 8 * 24 * 60));
      }),
      { numRuns: 60 },
    );
  });

  it('a fixed time fires once per matching wall-clock day, never twice, across a whole year in New York', () => {
    const fixed = fc
      .tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 3 }))
      .map(([m, h]) => `${m} ${h} * * *`);
    fc.assert(
      fc.property(fixed, (expr) => {
        const all = firings(expr, 'America/New_York', '2026-01-01T05:00:00Z', '2027-01-01T05:00:00Z');
        const days = all.map((iso) => {
          const w = wallOf(Date.parse(iso), 'America/New_York');
          return `${w.month}-${w.day}`;
        });
        // One firing on each of the 365 local days, none repeated (the gap day fires after the jump).
        expect(new Set(days).size).toBe(all.length);
        expect(all.length).toBe(365);
      }),
      { numRuns: 6 },
    );
  });

  it('is the same from any instant between the previous firing and it', () => {
    fc.assert(
      fc.property(denseCron, instant, fc.double({ min: 0, max: 1, noNaN: true }), (expr, after, share) => {
        const cron = parseCron(expr);
        const first = nextFiring(cron, 'Europe/Berlin', new Date(after));
        if (!first) return;
        const between = after + Math.floor((first.getTime() - after) * share);
        const again =
          between < first.getTime() ? nextFiring(cron, 'Europe/Berlin', new Date(between)) : first;
        expect(again?.getTime()).toBe(first.getTime());
        expect(first.getTime() % MINUTE).toBe(0);
        expect(first.getTime()).toBeGreaterThan(after);
      }),
      { numRuns: 150 },
    );
  });
});
