/**
 * Five-field cron expressions (minute hour day-of-month month day-of-week), as Vixie cron reads them: `*`, numbers,
 * ranges `a-b`, steps `*∕n` and `a-b/n` and `a/n`, lists `a,b`, month names `jan`…`dec`, day names `sun`…`sat`
 * (0 and 7 are Sunday), and the macros @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.
 * When both day fields are restricted (neither starts with `*`) a day matches if either does (cron's rule).
 */

export interface CronField {
  /** The allowed values, sorted. */
  values: readonly number[];
  /** The field was `*` or `*∕n`: it did not restrict the values itself. */
  wildcard: boolean;
  has(value: number): boolean;
}

export interface CronExpression {
  source: string;
  minute: CronField;
  hour: CronField;
  dayOfMonth: CronField;
  month: CronField;
  dayOfWeek: CronField;
}

/** A cron expression svcd cannot read; the message says which field and why. */
export class CronSyntaxError extends Error {
  override name = 'CronSyntaxError';
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** The names' values start at this number (months at 1). */
  namesFrom?: number;
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, namesFrom: 1 },
  // 7 is Sunday as well; folded into 0 below.
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES, namesFrom: 0 },
];

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

function valueOf(text: string, spec: FieldSpec): number {
  const index = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (index >= 0) return index + (spec.namesFrom ?? 0);
  if (!/^\d+$/.test(text)) {
    const names = spec.names ? ` or a name (${spec.names.join(', ')})` : '';
    throw new CronSyntaxError(`${spec.name}: '${text}' is not a number${names}`);
  }
  const value = Number(text);
  if (value < spec.min || value > spec.max)
    throw new CronSyntaxError(`${spec.name}: ${value} is out of range ${spec.min}-${spec.max}`);
  return value;
}

function stepOf(text: string, spec: FieldSpec): number {
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new CronSyntaxError(`${spec.name}: step '${text}' must be a whole number of at least 1`);
  return Number(text);
}

/** One comma-separated part: `*`, `n`, `a-b`, each optionally `/step`. */
function addPart(part: string, spec: FieldSpec, into: Set<number>): void {
  if (part === '') throw new CronSyntaxError(`${spec.name}: empty list entry`);
  const [range = '', step, extra] = part.split('/');
  if (extra !== undefined) throw new CronSyntaxError(`${spec.name}: '${part}' has more than one '/'`);
  let from: number;
  let to: number;
  if (range === '*') {
    from = spec.min;
    to = spec.max;
  } else if (range.includes('-')) {
    const [a = '', b = '', more] = range.split('-');
    if (more !== undefined) throw new CronSyntaxError(`${spec.name}: '${range}' is not a range a-b`);
    from = valueOf(a, spec);
    to = valueOf(b, spec);
    if (from > to) throw new CronSyntaxError(`${spec.name}: range ${range} runs backwards`);
  } else {
    from = valueOf(range, spec);
    // `a/n` means a, a+n, … up to the field's end.
    to = step === undefined ? from : spec.max;
  }
  const by = step === undefined ? 1 : stepOf(step, spec);
  for (let v = from; v <= to; v += by) into.add(v);
}

function parseField(text: string, spec: FieldSpec): CronField {
  const values = new Set<number>();
  for (const part of text.split(',')) addPart(part, spec, values);
  if (spec.max === 7 && values.delete(7)) values.add(0);
  const sorted = [...values].sort((a, b) => a - b);
  const lookup = new Set(sorted);
  return { values: sorted, wildcard: text.startsWith('*'), has: (v) => lookup.has(v) };
}

/** Parses a cron expression; throws CronSyntaxError saying what is wrong. */
export function parseCron(source: string): CronExpression {
  const trimmed = source.trim();
  const expanded = trimmed.startsWith('@') ? MACROS[trimmed.toLowerCase()] : trimmed;
  if (expanded === undefined)
    throw new CronSyntaxError(`unknown macro '${trimmed}' (use ${Object.keys(MACROS).join(', ')})`);
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5)
    throw new CronSyntaxError(
      `expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
    );
  const [minute, hour, dayOfMonth, month, dayOfWeek] = parts.map((part, i) =>
    parseField(part, FIELDS[i] as FieldSpec),
  ) as [CronField, CronField, CronField, CronField, CronField];
  return { source: trimmed, minute, hour, dayOfMonth, month, dayOfWeek };
}

/** Whether a calendar day matches (cron's rule: both day fields restricted → either may match). */
export function dayMatches(cron: CronExpression, dayOfMonth: number, weekday: number): boolean {
  const dom = cron.dayOfMonth.has(dayOfMonth);
  const dow = cron.dayOfWeek.has(weekday);
  // Vixie cron: a field starting with `*` does not restrict, so the other one decides (both must match).
  if (cron.dayOfMonth.wildcard || cron.dayOfWeek.wildcard) return dom && dow;
  return dom || dow;
}
