import { isIP } from 'node:net';

/** The first four groups of an IPv6 address, `::` expanded: its /64 network. */
function ipv6Network(ip: string): string {
  const [head = '', tail] = ip.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(Math.max(0, missing)).fill('0'), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Who a connection's share is counted for: the IPv4 address (also when IPv4-mapped), or the /64 network of an
 * IPv6 address, since one host is usually given a whole /64 and could otherwise pick a new address per connection.
 */
export function addressKey(remoteAddress: string | undefined): string {
  if (remoteAddress === undefined) return '';
  if (remoteAddress.startsWith('::ffff:') && isIP(remoteAddress.slice(7)) === 4)
    return remoteAddress.slice(7);
  if (isIP(remoteAddress) === 6) return ipv6Network(remoteAddress.split('%')[0] ?? remoteAddress);
  return remoteAddress;
}
