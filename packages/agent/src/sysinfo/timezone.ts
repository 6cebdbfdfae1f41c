/** `UTC (UTC+00:00)`, `Europe/Berlin (UTC+02:00)`: the IANA zone and the offset at `date`. */
export function describeTimezone(date = new Date(), zone?: string): string {
  const name = zone ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${name} (UTC${sign}${hh}:${mm})`;
}
