/** An IPv4 (4 bytes) or IPv6 (16 bytes) address. */
export interface IpAddress {
  family: 4 | 6;
  bytes: number[];
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const GROUP = /^[0-9A-Fa-f]{1,4}$/;

function parseIpv4(text: string): number[] | undefined {
  const match = IPV4.exec(text);
  if (!match) return undefined;
  const parts = match.slice(1);
  // Leading zeros are refused: some parsers read them as octal.
  if (parts.some((part) => part.length > 1 && part.startsWith('0'))) return undefined;
  const bytes = parts.map(Number);
  return bytes.every((b) => b <= 255) ? bytes : undefined;
}

/** Groups of one side of `::`, the last of which may be a dotted IPv4 address; as bytes. */
function parseGroups(text: string, mayEndInIpv4: boolean): number[] | undefined {
  if (text === '') return [];
  const groups = text.split(':');
  const bytes: number[] = [];
  for (const [index, group] of groups.entries()) {
    if (mayEndInIpv4 && index === groups.length - 1 && group.includes('.')) {
      const v4 = parseIpv4(group);
      if (!v4) return undefined;
      bytes.push(...v4);
    } else if (GROUP.test(group)) {
      const value = parseInt(group, 16);
      bytes.push(value >> 8, value & 0xff);
    } else {
      return undefined;
    }
  }
  return bytes;
}

function parseIpv6(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const [head = '', tail] = halves;
  if (tail === undefined) {
    const bytes = parseGroups(head, true);
    return bytes?.length === 16 ? bytes : undefined;
  }
  const left = parseGroups(head, false);
  const right = parseGroups(tail, true);
  if (!left || !right || left.length + right.length > 14) return undefined;
  return [...left, ...new Array<number>(16 - left.length - right.length).fill(0), ...right];
}

/**
 * Parses an IPv4 or IPv6 address (no zone, no brackets). An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is
 * returned as the IPv4 address, so that it matches IPv4 rules.
 */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = parseIpv4(text);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = text.includes(':') ? parseIpv6(text) : undefined;
  if (!v6) return undefined;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? { family: 4, bytes: v6.slice(12) } : { family: 6, bytes: v6 };
}

export const isIpAddress = (text: string): boolean => parseIp(text) !== undefined;

/** Whether the first `prefix` bits of two addresses of the same family are equal. */
export function samePrefix(a: IpAddress, b: IpAddress, prefix: number): boolean {
  if (a.family !== b.family) return false;
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    const index = bit / 8;
    if (((a.bytes[index] ?? 0) & mask) !== ((b.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
}

/** `0.0.0.0` or `::`. */
export const isUnspecified = (address: IpAddress): boolean => address.bytes.every((b) => b === 0);
