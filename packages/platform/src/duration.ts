import * as z from 'zod/mini';
import { describeValue } from './values.js';
import { rejectValue } from './zod-transforms.js';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

const NUMBER = /^\d+(?:\.\d+)?$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
const FORMS = 'a number of seconds or a value such as 500ms, 30s, 10m, 2h, 1d or 1h30m';

/** Parses `500ms`, `30s`, `10m`, `2h`, `1d`, combinations like `1h30m`, or a bare number of seconds; returns milliseconds. */
export function parseDuration(text: string): number {
  const input = text.trim();
  const fail = () => new Error(`invalid duration ${JSON.stringify(text)}: use ${FORMS}`);
  if (input === '') throw fail();
  let ms = 0;
  if (NUMBER.test(input)) {
    ms = Number(input) * 1000;
  } else {
    PART.lastIndex = 0;
    while (PART.lastIndex < input.length) {
      const match = PART.exec(input);
      if (!match) throw fail();
      ms += Number(match[1]) * UNIT_MS[match[2] as Unit];
    }
  }
  const rounded = Math.round(ms);
  if (!Number.isSafeInteger(rounded)) throw fail();
  return rounded;
}

/** Formats milliseconds as the shortest combined duration, e.g. `1h30m`, `1s500ms`, `0s`. */
export function formatDuration(ms: number): string {
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) return '0s';
  let out = ms < 0 ? '-' : '';
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const size = UNIT_MS[unit];
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return out;
}

/** Why a config value is not a duration; zod's union error for the two accepted input types. */
export const durationTypeError = (issue: { input?: unknown }): string =>
  issue.input === undefined
    ? 'missing; this key is required'
    : `expected a duration (${FORMS}), got ${describeValue(issue.input)}`;

/** A config duration (a whole number of seconds ≥ 0 or a duration string) in milliseconds, as a zod transform. */
export function durationToMilliseconds(value: number | string, ctx: z.core.ParsePayload): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value * 1000;
    return rejectValue(ctx, value, `expected a whole number of seconds ≥ 0, got ${value}`);
  }
  try {
    return parseDuration(value);
  } catch (error) {
    return rejectValue(ctx, value, (error as Error).message);
  }
}

/**
 * A config duration for zod/mini schemas; the output is milliseconds. svcd's classic-zod config builds the same
 * from durationTypeError and durationToMilliseconds.
 */
export const durationSchema = z.pipe(
  z.union([z.number(), z.string()], { error: durationTypeError }),
  z.transform(durationToMilliseconds),
);
