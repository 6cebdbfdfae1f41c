import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** One `tunnel_allowed` entry: an address range (absent = any address) and an optional port. */
export interface AllowEntry {
  readonly text: string;
  readonly network?: BlockList;
  readonly port?: number;
}

export type Resolver = (host: string) => Promise<string[]>;

const FORMS = 'use IP, CIDR, IP:port, CIDR:port, [IPv6]:port, :port or port';
const PORT = /^\d{1,5}$/;

function parsePort(text: string, entry: string): number {
  const port = PORT.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535))
    throw new Error(`tunnel_allowed entry ${JSON.stringify(entry)}: port must be 1-65535; ${FORMS}`);
  return port;
}

function parseNetwork(text: string, entry: string): BlockList {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(address);
  if (family === 0)
    throw new Error(`tunnel_allowed entry ${JSON.stringify(entry)}: not an IP address or CIDR; ${FORMS}`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const maxPrefix = family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(maxPrefix) : text.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= maxPrefix))
    throw new Error(`tunnel_allowed entry ${JSON.stringify(entry)}: prefix length must be 0-${maxPrefix}`);
  const list = new BlockList();
  list.addSubnet(address, prefix, type);
  return list;
}

/** Parses `IP`, `CIDR`, `IP:port`, `CIDR:port`, `[IPv6 or CIDR]:port`, `:port` or a bare `port`. */
export function parseAllowEntry(entry: string): AllowEntry {
  const text = entry.trim();
  if (PORT.test(text) || (text.startsWith(':') && !text.startsWith('::'))) {
    return { text, port: parsePort(text.replace(/^:/, ''), entry) };
  }
  const bracket = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (bracket) {
    const [, inner = '', port] = bracket;
    return {
      text,
      network: parseNetwork(inner, entry),
      ...(port === undefined ? {} : { port: parsePort(port, entry) }),
    };
  }
  // IPv6 needs at least two colons, so exactly one colon separates an IPv4 address or CIDR from a port.
  const colons = text.split(':').length - 1;
  if (colons === 1) {
    const colon = text.indexOf(':');
    return {
      text,
      network: parseNetwork(text.slice(0, colon), entry),
      port: parsePort(text.slice(colon + 1), entry),
    };
  }
  const slash = text.indexOf('/');
  if (isIP(slash < 0 ? text : text.slice(0, slash)) !== 0)
    return { text, network: parseNetwork(text, entry) };
  throw new Error(`tunnel_allowed entry ${JSON.stringify(entry)} has an unsupported form; ${FORMS}`);
}

/** `::ffff:10.0.0.1` is the IPv4 address 10.0.0.1 for matching purposes. */
function plainAddress(address: string): { address: string; type: 'ipv4' | 'ipv6' } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const plain = mapped?.[1] ?? address;
  const family = isIP(plain);
  if (family === 0) return undefined;
  return { address: plain, type: family === 4 ? 'ipv4' : 'ipv6' };
}

function entryMatches(entry: AllowEntry, address: string, port: number): boolean {
  if (entry.port !== undefined && entry.port !== port) return false;
  if (!entry.network) return true;
  const ip = plainAddress(address);
  return ip !== undefined && entry.network.check(ip.address, ip.type);
}

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((result) => result.address);

/**
 * The `[client] tunnel_allowed` list: which targets the server may ask this agent to connect to. An empty list
 * allows everything; otherwise the host is resolved and every address must match at least one entry.
 */
export class TunnelAllowList {
  private readonly entries: AllowEntry[];

  constructor(
    patterns: readonly string[],
    private readonly resolve: Resolver = systemResolver,
  ) {
    this.entries = patterns.map(parseAllowEntry);
  }

  get allowsEverything(): boolean {
    return this.entries.length === 0;
  }

  /** Whether one already-resolved address and port is allowed. */
  allowsAddress(address: string, port: number): boolean {
    return this.allowsEverything || this.entries.some((entry) => entryMatches(entry, address, port));
  }

  /** Whether `host:port` is allowed; a host that does not resolve is not. */
  async allows(host: string, port: number): Promise<boolean> {
    if (this.allowsEverything) return true;
    const bare = host.replace(/^\[(.*)\]$/, '$1');
    let addresses: string[];
    try {
      addresses = isIP(bare) ? [bare] : await this.resolve(bare);
    } catch {
      return false;
    }
    return addresses.length > 0 && addresses.every((address) => this.allowsAddress(address, port));
  }
}
