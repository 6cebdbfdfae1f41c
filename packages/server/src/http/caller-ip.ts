import { BlockList, isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/** Addresses that are not the caller's public one: private, loopback, link-local, CGNAT, unique-local. */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['100.64.0.0', 10],
  ['0.0.0.0', 8],
] as const)
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::1', 128],
  ['::', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');

const isPublic = (ip: string): boolean => {
  const family = isIP(ip);
  return family !== 0 && !NOT_PUBLIC.check(ip, family === 4 ? 'ipv4' : 'ipv6');
};

/** `::ffff:203.0.113.9` → `203.0.113.9`. */
const unmapped = (ip: string): string =>
  ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;

/**
 * The caller's IP address as OpenRPort's GET /me/ip reports it: the first public address in X-Forwarded-For
 * (the caller as a proxy saw it), else the address of the connection. Only shown to the caller, who could set
 * the header to anything anyway; svcd takes no decision on it.
 */
export function callerIp(request: FastifyRequest): string {
  const forwarded = request.headers['x-forwarded-for'];
  const list = (Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '')).split(',');
  for (const entry of list) {
    const ip = unmapped(entry.trim());
    if (isPublic(ip)) return ip;
  }
  return unmapped(request.socket.remoteAddress ?? request.ip);
}
