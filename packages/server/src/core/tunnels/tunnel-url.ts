import { isUnspecified, parseIp } from './ip-address.js';

/** Schemes of well-known target ports, for a tunnel opened without a `scheme` parameter. */
const SCHEME_BY_PORT = new Map<number, string>([
  [22, 'ssh'],
  [80, 'http'],
  [443, 'https'],
  [3389, 'rdp'],
  [5900, 'vnc'],
]);

export const schemeForPort = (port: number): string | null => SCHEME_BY_PORT.get(port) ?? null;

/** A listen address that names one interface (not 0.0.0.0 or ::), so it is also where users connect. */
function isSpecific(lhost: string): boolean {
  const ip = parseIp(lhost);
  return lhost !== '' && !(ip && isUnspecified(ip));
}

/** Where users reach a tunnel: `<scheme>://<host>:<lport>`, null without a scheme. */
export function tunnelUrl(
  scheme: string | null,
  lhost: string,
  lport: number,
  /** The server's public host name, used when the tunnel listens on every interface. */
  publicHost: string,
): string | null {
  if (scheme === null) return null;
  const host = isSpecific(lhost) ? lhost : publicHost;
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${lport}`;
}
