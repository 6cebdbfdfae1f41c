/** Splits `host:port` or `[v6]:port`; the config schema has already checked the form. */
export function splitHostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  const rawHost = address.slice(0, at);
  const host = rawHost.startsWith('[') && rawHost.endsWith(']') ? rawHost.slice(1, -1) : rawHost;
  return { host: host || '0.0.0.0', port: Number(address.slice(at + 1)) };
}

const UNSPECIFIED = new Set(['0.0.0.0', '::', '']);

/** A URL people can use to reach a listener; an unspecified bind address becomes the given host name. */
export function publicUrl(scheme: string, host: string, port: number, hostname: string): string {
  const shown = UNSPECIFIED.has(host) ? hostname : host;
  return `${scheme}://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

/** The host of an absolute URL, without the brackets of an IPv6 address. */
export function hostOfUrl(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
}
