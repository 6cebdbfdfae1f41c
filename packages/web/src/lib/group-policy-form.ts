/**
 * A user group's client scope and restrictions (issue 28 §2, §3) as the user-group editor edits them, and back to
 * the fields of PUT /user-groups/{name}. svcd validates what is sent; the editor shows its 400 as it comes.
 */

/** One side (allow or deny) of tunnels_restricted; an empty list leaves its key out. */
export interface TunnelRuleForm {
  scheme: string[];
  remote: string[];
  acl: string[];
}

export interface PolicyForm {
  /** Off: the group is not limited (client_groups null). On with no group: its members reach no client. */
  scoped: boolean;
  clientGroups: string[];
  /** Regular expressions, one per line; none: no allow list (every command not denied). */
  allowCommands: string;
  denyCommands: string;
  tunnelAllow: TunnelRuleForm;
  tunnelDeny: TunnelRuleForm;
}

/** The group's fields as GET /user-groups shows them. */
export interface StoredPolicy {
  client_groups?: string[] | null;
  commands_restricted?: Record<string, unknown>;
  tunnels_restricted?: Record<string, unknown>;
}

/** The fields PUT /user-groups/{name} takes besides permissions. */
export interface PolicyBody {
  client_groups: string[] | null;
  commands_restricted: { allow?: string[]; deny?: string[] };
  tunnels_restricted: { allow?: TunnelRuleBody; deny?: TunnelRuleBody };
}

type TunnelRuleBody = { scheme?: string[]; remote?: (number | string)[]; acl?: string[] };

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** The entries of a stored list as text (numbers too); anything else: none. */
const entries = (value: unknown): string[] =>
  Array.isArray(value)
    ? value.filter((v) => typeof v === 'string' || typeof v === 'number').map((v) => String(v))
    : [];

const tunnelRuleForm = (value: unknown): TunnelRuleForm => {
  const rule = asRecord(value);
  return { scheme: entries(rule.scheme), remote: entries(rule.remote), acl: entries(rule.acl) };
};

export function policyFormOf(group: StoredPolicy | undefined): PolicyForm {
  const commands = asRecord(group?.commands_restricted);
  const tunnels = asRecord(group?.tunnels_restricted);
  return {
    scoped: Array.isArray(group?.client_groups),
    clientGroups: group?.client_groups ?? [],
    allowCommands: entries(commands.allow).join('\n'),
    denyCommands: entries(commands.deny).join('\n'),
    tunnelAllow: tunnelRuleForm(tunnels.allow),
    tunnelDeny: tunnelRuleForm(tunnels.deny),
  };
}

/** Non-blank lines, trimmed at the end only (a leading blank may belong to the pattern). */
const patternLines = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .filter((line) => line.trim() !== '');

const cleaned = (list: readonly string[]): string[] => list.map((v) => v.trim()).filter(Boolean);

function tunnelRuleBody(form: TunnelRuleForm): TunnelRuleBody | undefined {
  const scheme = cleaned(form.scheme);
  // A bare port is sent as a number, a range ("8000-8100") as text; svcd says what else is wrong.
  const remote = cleaned(form.remote).map((port) => (/^\d+$/.test(port) ? Number(port) : port));
  const acl = cleaned(form.acl);
  const rule: TunnelRuleBody = {
    ...(scheme.length ? { scheme } : {}),
    ...(remote.length ? { remote } : {}),
    ...(acl.length ? { acl } : {}),
  };
  return Object.keys(rule).length ? rule : undefined;
}

export function policyBodyOf(form: PolicyForm): PolicyBody {
  const allow = patternLines(form.allowCommands);
  const deny = patternLines(form.denyCommands);
  const tunnelAllow = tunnelRuleBody(form.tunnelAllow);
  const tunnelDeny = tunnelRuleBody(form.tunnelDeny);
  return {
    client_groups: form.scoped ? cleaned(form.clientGroups) : null,
    commands_restricted: { ...(allow.length ? { allow } : {}), ...(deny.length ? { deny } : {}) },
    tunnels_restricted: {
      ...(tunnelAllow ? { allow: tunnelAllow } : {}),
      ...(tunnelDeny ? { deny: tunnelDeny } : {}),
    },
  };
}

/** A short line for the groups table: the scope and which restrictions apply. */
export function policySummary(group: StoredPolicy): string {
  const parts = [
    group.client_groups == null
      ? 'all clients'
      : group.client_groups.length === 0
        ? 'no client'
        : `clients of ${group.client_groups.join(', ')}`,
  ];
  if (Object.keys(asRecord(group.commands_restricted)).length) parts.push('commands restricted');
  if (Object.keys(asRecord(group.tunnels_restricted)).length) parts.push('tunnels restricted');
  return parts.join('; ');
}
