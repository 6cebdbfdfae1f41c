/** Formatting for the console: sizes, durations and times in the browser's zone. */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 10 ? 0 : 1;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** `2 d 3 h`, `5 min 2 s`, `800 ms`: the two largest parts. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const parts: [number, string][] = [
    [Math.floor(ms / 86_400_000), 'd'],
    [Math.floor(ms / 3_600_000) % 24, 'h'],
    [Math.floor(ms / 60_000) % 60, 'min'],
    [Math.floor(ms / 1000) % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${n} ${unit}`)
    .join(' ');
}

/** "3 min ago", "in 2 h": a time relative to `now`, for lists; the exact time goes in a title. */
export function formatRelative(iso: string, now: number): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const delta = now - then;
  if (Math.abs(delta) < 10_000) return 'just now';
  const text = formatDuration(Math.abs(delta)).split(' ').slice(0, 2).join(' ');
  return delta > 0 ? `${text} ago` : `in ${text}`;
}

const EXACT: Intl.DateTimeFormatOptions = {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
};

/**
 * One formatter per time zone ('' the browser's), made once: building an Intl.DateTimeFormat is far dearer than
 * formatting with it, and lists format a time in every row.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function exactFormatter(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? '';
  let formatter = formatters.get(key);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat(undefined, { ...EXACT, ...(timeZone ? { timeZone } : {}) });
    formatters.set(key, formatter);
  }
  return formatter;
}

/** The exact time in the browser's zone (or `timeZone`), with the zone's name. */
export function formatExact(iso: string, timeZone?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return exactFormatter(timeZone).format(date);
}
