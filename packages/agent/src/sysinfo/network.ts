import type { NetworkInterfaceInfo } from 'node:os';

/** Non-internal IPv4 and IPv6 addresses, each once, in interface order. */
export function externalAddresses(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): {
  ipv4: string[];
  ipv6: string[];
} {
  const ipv4 = new Set<string>();
  const ipv6 = new Set<string>();
  for (const infos of Object.values(interfaces)) {
    for (const info of infos ?? []) {
      if (info.internal) continue;
      if (info.family === 'IPv4') ipv4.add(info.address);
      else ipv6.add(info.address);
    }
  }
  return { ipv4: [...ipv4], ipv6: [...ipv6] };
}
