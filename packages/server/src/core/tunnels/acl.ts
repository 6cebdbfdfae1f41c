import { AppError, ERROR_CODES } from '@svc/protocol';
import { isUnspecified, parseIp, samePrefix, type IpAddress } from './ip-address.js';

interface AclEntry {
  address: IpAddress;
  prefix: number;
}

/** Who may connect to a tunnel's server port: IPv4/IPv6 addresses and CIDR ranges. */
export interface Acl {
  /** The entries as given, trimmed and joined with commas; what the API shows and duplicates compare. */
  readonly text: string;
  readonly entries: readonly AclEntry[];
}

const invalidAcl = (detail: string): AppError =>
  new AppError('invalid', ERROR_CODES.invalidAcl, 'Invalid ACL: acl must list IP addresses or CIDRs', detail);

function parseEntry(text: string): AclEntry {
  const slash = text.indexOf('/');
  const address = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!address) throw invalidAcl(`${JSON.stringify(text)} is not an IPv4/IPv6 address or CIDR`);
  const max = address.family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : text.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max))
    throw invalidAcl(`${JSON.stringify(text)}: the prefix length must be 0-${max}`);
  if (isUnspecified(address))
    throw invalidAcl(
      `${JSON.stringify(text)}: 0.0.0.0 and :: are not accepted; leave acl out to allow anyone`,
    );
  return { address, prefix };
}

/** Parses `acl`: comma-separated addresses or CIDRs, e.g. `192.0.2.7,10.0.0.0/8,2001:db8::/32`. */
export function parseAcl(text: string): Acl {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.some((part) => part === ''))
    throw invalidAcl('an entry is empty; separate entries with single commas');
  return { text: parts.join(','), entries: parts.map(parseEntry) };
}

/** Whether a peer address (as a socket reports it, `::ffff:` mapped IPv4 included) is listed. */
export function aclAllows(acl: Acl, peer: string): boolean {
  const address = parseIp(peer);
  return (
    address !== undefined && acl.entries.some((entry) => samePrefix(entry.address, address, entry.prefix))
  );
}
