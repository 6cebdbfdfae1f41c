import { readlinkSync } from 'node:fs';

/** Zone names ICU and V8 report as plain `UTC`. */
const UTC_ALIASES = new Set(
  ['UTC', 'UCT', 'GMT', 'GMT0', 'GMT+0', 'GMT-0', 'Universal', 'Zulu', 'Greenwich'].flatMap((n) => [
    n,
    `Etc/${n}`,
  ]),
);

export interface ZoneSources {
  /** The TZ environment variable. */
  tz: string | undefined;
  /** Where /etc/localtime links to, or undefined. */
  localtimeLink: () => string | undefined;
  /** Intl's answer. It loads ~8 MB of ICU data and code that the agent then keeps resident, so it is the fallback. */
  intl: () => string | undefined;
}

const readLocaltimeLink = () => {
  try {
    return readlinkSync('/etc/localtime');
  } catch {
    return undefined;
  }
};

const hostSources = (): ZoneSources => ({
  tz: process.env.TZ,
  localtimeLink: readLocaltimeLink,
  intl: () => Intl.DateTimeFormat().resolvedOptions().timeZone,
});

/**
 * The local IANA zone. Without TZ it is the zoneinfo name /etc/localtime links to, as ICU finds it too (ICU then
 * renames a few zones to older aliases, e.g. Asia/Kolkata to Asia/Calcutta; the link's name is kept here). TZ, a
 * missing link and other systems are left to Intl.
 */
export function localZoneName(sources: ZoneSources = hostSources()): string {
  const link = sources.tz === undefined ? sources.localtimeLink() : undefined;
  const name = (link && /\/zoneinfo\/([\w+-]+(?:\/[\w+-]+)*)$/.exec(link)?.[1]) || sources.intl() || 'UTC';
  return UTC_ALIASES.has(name) ? 'UTC' : name;
}

/** `UTC (UTC+00:00)`, `Europe/Berlin (UTC+02:00)`: the IANA zone and the offset at `date`. */
export function describeTimezone(date = new Date(), zone?: string): string {
  const name = zone ?? localZoneName();
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${name} (UTC${sign}${hh}:${mm})`;
}
