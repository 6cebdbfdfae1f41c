/**
 * Source addresses for simulated agents (BENCH_SOURCE_ADDRESSES). A connection from one address to one svcd
 * listener can use only the kernel's ephemeral ports (32768-60999 by default: ~28,000), and a socket bound to a
 * source address before connecting (as Node does with `localAddress`) takes one of that address's ports whatever
 * the destination. 50,000 agents therefore connect from several 127.x addresses: on Linux every address of
 * 127.0.0.0/8 is on the loopback interface without any set-up.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** At most this many addresses in one list (a range of 127.x is quickly longer than any bench needs). */
const MAX_ADDRESSES = 256;

const toNumber = (ip: string): number | undefined => {
  const parts = ip.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
};
const toAddress = (n: number): string =>
  [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/**
 * Parses a list of IPv4 addresses: comma-separated, each an address or a range `first-last`, e.g.
 * `127.0.0.2-127.0.0.5,127.0.1.1`. Empty or `none`: no list (the system chooses, as without the knob).
 */
export function parseSourceAddresses(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'none') return [];
  const out: string[] = [];
  for (const entry of trimmed.split(',').map((e) => e.trim())) {
    const [from, to = from, extra] = entry.split('-').map((e) => e.trim());
    const first = toNumber(from ?? '');
    const last = toNumber(to ?? '');
    if (first === undefined || last === undefined || extra !== undefined)
      throw new Error(`${JSON.stringify(entry)} is not an IPv4 address or a range first-last`);
    if (last < first) throw new Error(`${JSON.stringify(entry)}: the range ends before it starts`);
    if (out.length + last - first + 1 > MAX_ADDRESSES)
      throw new Error(`more than ${MAX_ADDRESSES} source addresses`);
    for (let n = first; n <= last; n++) out.push(toAddress(n));
  }
  if (new Set(out).size !== out.length) throw new Error(`${JSON.stringify(text)} names an address twice`);
  return out;
}

/** The kernel's ephemeral port range (Linux), or its default where it cannot be read. */
export function ephemeralPorts(): { low: number; high: number; count: number } {
  let low = 32768;
  let high = 60999;
  try {
    const [a, b] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    if (Number.isInteger(Number(a)) && Number.isInteger(Number(b))) [low, high] = [Number(a), Number(b)];
  } catch {
    // not Linux: the default range
  }
  return { low, high, count: high - low + 1 };
}

/**
 * Why `agents` connections cannot all be opened, or undefined when they can: from `addresses` in turn (each
 * address's ports are shared by every destination), or without a list, at most `perListener` to one listener
 * from 127.0.0.1 (the kernel reuses a port towards another destination). Keeps 5 % of the ports for the rest.
 */
export function sourcePortShortage(
  addresses: string[],
  agents: number,
  perListener: number,
  ports = ephemeralPorts().count,
): string | undefined {
  const usable = Math.floor(ports * 0.95);
  if (addresses.length === 0) {
    if (perListener <= usable) return undefined;
    return (
      `up to ${perListener} agents on one svcd from 127.0.0.1 need more than its ~${usable} ephemeral ports: ` +
      `set BENCH_SOURCE_ADDRESSES, e.g. 127.0.0.2-127.0.0.${1 + Math.ceil(agents / usable)}`
    );
  }
  const perAddress = Math.ceil(agents / addresses.length);
  if (perAddress <= usable) return undefined;
  return (
    `${agents} agents from ${addresses.length} source addresses are ${perAddress} per address, more than its ` +
    `~${usable} ephemeral ports: give BENCH_SOURCE_ADDRESSES at least ${Math.ceil(agents / usable)} addresses`
  );
}

/** Rejects unless every address can be bound here (a local address; any 127.x on Linux). */
export async function checkBindable(addresses: string[]): Promise<void> {
  for (const address of addresses)
    await new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once('error', (err) =>
        reject(new Error(`cannot use ${address} as a source address: ${err.message}`)),
      );
      server.listen(0, address, () => server.close(() => resolve()));
    });
}
