import { AppError, ERROR_CODES, type TunnelRule, type TunnelsRestricted } from '@svc/protocol';
import { parseAcl, type Acl } from '../tunnels/acl.js';
import { samePrefix } from '../tunnels/ip-address.js';

type AclEntry = Acl['entries'][number];

/** What a tunnel request is checked by. */
export interface TunnelFacts {
  scheme: string | null;
  remotePort: number;
  acl: Acl | undefined;
}

interface CompiledRule {
  schemes?: { text: string; lower: string }[];
  ports?: { text: string; from: number; to: number }[];
  acl?: { text: string; entry: AclEntry }[];
}

interface GroupTunnelRule {
  group: string;
  allow: CompiledRule | undefined;
  deny: CompiledRule;
}

function compilePorts(ports: NonNullable<TunnelRule['remote']>): NonNullable<CompiledRule['ports']> {
  return ports.map((port) => {
    const text = String(port);
    const [from, to = from] = text.split('-').map(Number) as [number, number?];
    if (!(from >= 1 && from <= 65535 && to >= from && to <= 65535))
      throw new Error(`remote ${JSON.stringify(text)} is not a port 1-65535 or a range low-high`);
    return { text, from, to };
  });
}

function compileAcl(entries: readonly string[]): NonNullable<CompiledRule['acl']> {
  return entries.map((text) => {
    try {
      const [entry] = parseAcl(text).entries;
      if (!entry) throw new Error('empty');
      return { text, entry };
    } catch (err) {
      throw new Error(`acl ${JSON.stringify(text)}: ${(err as AppError).detail || (err as Error).message}`);
    }
  });
}

function compileRule(rule: TunnelRule): CompiledRule {
  return {
    ...(rule.scheme ? { schemes: rule.scheme.map((text) => ({ text, lower: text.toLowerCase() })) } : {}),
    ...(rule.remote ? { ports: compilePorts(rule.remote) } : {}),
    ...(rule.acl ? { acl: compileAcl(rule.acl) } : {}),
  };
}

/** Compiles one group's `tunnels_restricted`; throws an Error naming what is wrong. */
export function compileTunnelRule(group: string, restricted: TunnelsRestricted): GroupTunnelRule {
  return {
    group,
    allow: restricted.allow ? compileRule(restricted.allow) : undefined,
    deny: compileRule(restricted.deny ?? {}),
  };
}

/** `inner` lies inside `outer` (same family, outer's prefix no longer, same leading bits). */
const within = (inner: AclEntry, outer: AclEntry): boolean =>
  outer.prefix <= inner.prefix && samePrefix(outer.address, inner.address, outer.prefix);

/** The two networks share an address. */
const overlaps = (a: AclEntry, b: AclEntry): boolean =>
  samePrefix(a.address, b.address, Math.min(a.prefix, b.prefix));

/** Why `rule` (an allow rule) does not cover the tunnel; undefined when it does. */
function notAllowedBecause(rule: CompiledRule, tunnel: TunnelFacts): string | undefined {
  if (rule.schemes) {
    const scheme = tunnel.scheme?.toLowerCase();
    if (scheme === undefined || !rule.schemes.some((s) => s.lower === scheme))
      return `scheme ${tunnel.scheme === null ? '(none)' : JSON.stringify(tunnel.scheme)} is not in allow.scheme`;
  }
  if (rule.ports && !rule.ports.some((p) => tunnel.remotePort >= p.from && tunnel.remotePort <= p.to))
    return `remote port ${tunnel.remotePort} is not in allow.remote`;
  if (rule.acl) {
    if (!tunnel.acl) return 'the tunnel has no acl (anyone may connect); allow.acl requires one';
    const allowed = rule.acl;
    const loose = tunnel.acl.entries.find((entry) => !allowed.some((a) => within(entry, a.entry)));
    if (loose) return 'an acl entry lies outside allow.acl';
  }
  return undefined;
}

/** The deny rule the tunnel hits, as `key "value"`; undefined when none. */
function deniedBy(rule: CompiledRule, tunnel: TunnelFacts): string | undefined {
  const scheme = tunnel.scheme?.toLowerCase();
  const s = scheme === undefined ? undefined : rule.schemes?.find((d) => d.lower === scheme);
  if (s) return `deny.scheme ${JSON.stringify(s.text)}`;
  const p = rule.ports?.find((d) => tunnel.remotePort >= d.from && tunnel.remotePort <= d.to);
  if (p) return `deny.remote ${JSON.stringify(p.text)}`;
  if (rule.acl) {
    const entries = tunnel.acl?.entries;
    const a = rule.acl.find((d) => entries === undefined || entries.some((e) => overlaps(e, d.entry)));
    if (a)
      return `deny.acl ${JSON.stringify(a.text)}${entries === undefined ? ' (the tunnel has no acl)' : ''}`;
  }
  return undefined;
}

/**
 * The tunnels a user may open (issue 28 §3), from the `tunnels_restricted` of each of their user groups: one
 * group's `allow` must cover the whole tunnel (a group without `allow` covers any), and no group's `deny` may
 * match it — deny wins.
 */
export class TunnelRestriction {
  static readonly NONE = new TunnelRestriction([]);

  constructor(private readonly rules: readonly GroupTunnelRule[]) {}

  /** 403 ERR_TUNNEL_RESTRICTED naming the deny rule matched, or why each group's allow rule does not cover it. */
  assertTunnel(tunnel: TunnelFacts): void {
    for (const rule of this.rules) {
      const hit = deniedBy(rule.deny, tunnel);
      if (hit)
        throw new AppError(
          'forbidden',
          ERROR_CODES.tunnelRestricted,
          `Tunnel refused by user group '${rule.group}': tunnels_restricted.${hit}`,
          'a deny rule wins over any allow rule',
        );
    }
    if (this.rules.length === 0 || this.rules.some((rule) => rule.allow === undefined)) return;
    const reasons: string[] = [];
    for (const rule of this.rules) {
      const why = notAllowedBecause(rule.allow ?? {}, tunnel);
      if (why === undefined) return;
      reasons.push(`'${rule.group}': ${why}`);
    }
    throw new AppError(
      'forbidden',
      ERROR_CODES.tunnelRestricted,
      'Tunnel refused: no allow rule of your user groups covers it (tunnels_restricted.allow)',
      reasons.join('; '),
    );
  }
}
