/**
 * Filter values for time fields (`filter[created_at]=...`): an RFC 3339 time or any prefix of one down to the
 * year names the period it covers, e.g. `2024` (the year), `2024-05-01` (that day), `2024-05-01T10:30` (that
 * minute), `2024-05-01T10:30:00.123Z` (that millisecond). Without an offset the time is UTC, the zone svcd
 * writes times in. A trailing `*` is allowed and changes nothing (`2024-05*` = `2024-05`). Digits of a fraction
 * beyond milliseconds are ignored: times are kept to the millisecond.
 *
 * No node:* imports: this module is shared with browsers and agents.
 */

/** The half-open period `[fromMs, toMs)` in epoch milliseconds. */
export interface TimePeriod {
  fromMs: number;
  toMs: number;
}

const TIME_PREFIX =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?)?)?)?$/;
const OFFSET = /(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** An example for error messages. */
export const TIME_FILTER_HINT =
  'use an RFC 3339 time or a prefix of one, e.g. 2024-05-01, 2024-05-01T10:30 or 2024-05-01T10:30:00Z ' +
  '(UTC unless an offset is given)';

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();

/** The period a filter value names, or undefined when the value is not a time (prefix). */
export function parseTimePeriod(raw: string): TimePeriod | undefined {
  let text = raw.trim();
  if (text.endsWith('*')) text = text.slice(0, -1);
  let offsetMs = 0;
  const offset = OFFSET.exec(text);
  // An offset needs at least hours and minutes before it (`2024-05-01-02:00` is not a time).
  if (offset && /[Tt ]\d{2}:\d{2}/.test(text)) {
    text = text.slice(0, offset.index);
    if (offset[1] !== undefined) {
      const hours = Number(offset[2]);
      const minutes = Number(offset[3]);
      if (hours > 23 || minutes > 59) return undefined;
      offsetMs = (offset[1] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
    }
  }
  const m = TIME_PREFIX.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac] = m;
  const year = Number(y);
  const month = mo === undefined ? 1 : Number(mo);
  const day = d === undefined ? 1 : Number(d);
  const hour = h === undefined ? 0 : Number(h);
  const minute = mi === undefined ? 0 : Number(mi);
  const second = s === undefined ? 0 : Number(s);
  const fraction = frac === undefined ? '' : frac.slice(0, 3);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;

  const ms = fraction === '' ? 0 : Number(fraction.padEnd(3, '0'));
  const start = new Date(0);
  start.setUTCFullYear(year, month - 1, day);
  start.setUTCHours(hour, minute, second, ms);
  const end = new Date(start.getTime());
  if (frac !== undefined) end.setUTCMilliseconds(ms + 10 ** (3 - fraction.length));
  else if (s !== undefined) end.setUTCSeconds(second + 1);
  else if (mi !== undefined) end.setUTCMinutes(minute + 1);
  else if (h !== undefined) end.setUTCHours(hour + 1);
  else if (d !== undefined) end.setUTCDate(day + 1);
  else if (mo !== undefined) end.setUTCMonth(month);
  else end.setUTCFullYear(year + 1);
  return { fromMs: start.getTime() - offsetMs, toMs: end.getTime() - offsetMs };
}
