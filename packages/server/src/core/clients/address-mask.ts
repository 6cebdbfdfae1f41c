/**
 * The client `address` as the API shows it: the remote address with its port, the last IPv4 octet or the last
 * IPv6 group replaced by `x`, e.g. `203.0.113.x:51234` or `[2001:db8::x]:51234`. IPv4-mapped IPv6 addresses
 * (`::ffff:203.0.113.7`) are shown as IPv4.
 */
export function maskAddress(ip: string, port: number | undefined): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  const v4 = mapped?.[1] ?? (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(ip) ? ip : undefined);
  const suffix = port === undefined ? '' : `:${port}`;
  if (v4 !== undefined) return `${v4.slice(0, v4.lastIndexOf('.'))}.x${suffix}`;
  if (ip.includes(':')) {
    const bare = ip.split('%')[0] ?? ip; // drop a zone id such as %eth0
    const masked = `${bare.slice(0, bare.lastIndexOf(':'))}:x`;
    return port === undefined ? masked : `[${masked}]${suffix}`;
  }
  return ip === '' ? 'unknown' : `${ip}${suffix}`;
}
