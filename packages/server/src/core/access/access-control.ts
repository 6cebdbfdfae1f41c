import { isAdmin, type UserRecord } from '../users/user-store.js';
import { ClientScope } from './client-scope.js';
import { CommandRestriction, compileCommandRule } from './command-restriction.js';
import type { GroupPolicies } from './group-policies.js';
import type { ScopeMembers, StoredGroupPolicy } from './ports.js';
import { storedPolicyInvalid } from './policy-errors.js';
import { TunnelRestriction, compileTunnelRule, type TunnelFacts } from './tunnel-restriction.js';

/**
 * How long a user's access is reused. Policies and client groups changed on another node (or around the API)
 * take effect within this time; client records changing (a client joining a group) are followed at once.
 */
export const ACCESS_TTL_MS = 1_000;
/** Group sets remembered at once; past this the memory starts afresh. */
const MAX_REMEMBERED = 1_000;

/** What one user may reach and do: their client scope and command and tunnel restrictions. */
export class UserAccess {
  static readonly UNLIMITED = new UserAccess(
    ClientScope.ALL,
    CommandRestriction.NONE,
    TunnelRestriction.NONE,
  );

  constructor(
    readonly scope: ClientScope,
    readonly commands: CommandRestriction,
    readonly tunnels: TunnelRestriction,
  ) {}

  /** A single client: 404 outside the scope. */
  assertClient(id: string): void {
    this.scope.assertClient(id);
  }

  /** A run on one client: the client is in scope and the command allowed. */
  assertCommandOn(clientId: string, command: string): void {
    this.scope.assertClient(clientId);
    this.commands.assertCommand(command);
  }

  assertScriptOn(clientId: string, script: string): void {
    this.scope.assertClient(clientId);
    this.commands.assertScript(script);
  }

  /** A run on many clients: every target in scope (else refused whole), the command or script allowed. */
  assertRun(run: { targetIds: readonly string[]; command: string; isScript: boolean }): void {
    this.scope.assertTargets(run.targetIds);
    if (run.isScript) this.commands.assertScript(run.command);
    else this.commands.assertCommand(run.command);
  }

  assertTunnelOn(clientId: string, tunnel: TunnelFacts): void {
    this.scope.assertClient(clientId);
    this.tunnels.assertTunnel(tunnel);
  }
}

/**
 * Issue 28 §2 and §3 in one place: a user's access from the policies of their user groups. Administrators, and
 * users in a group without limits, are not scoped; a user whose every group is scoped sees the union of those
 * groups' client groups. Restrictions combine as command-restriction.ts and tunnel-restriction.ts say.
 * Policies are read on each call (they may change on another node); patterns are compiled once.
 */
export class AccessControl {
  /** Accesses by group set, each kept ACCESS_TTL_MS: GET /clients then needs no database read per request. */
  private readonly remembered = new Map<string, { until: number; access: Promise<UserAccess> }>();

  constructor(
    private readonly policies: GroupPolicies,
    private readonly members: ScopeMembers,
    private readonly now: () => number = Date.now,
  ) {
    policies.onSave(() => this.remembered.clear());
  }
  /** Drops the limits remembered per set of groups (a group's scope or restrictions changed elsewhere). */
  forgetRemembered(): void {
    this.remembered.clear();
  }

  /** The access of a user; at most ACCESS_TTL_MS old (a save through this node's GroupPolicies: at once). */
  of(user: Pick<UserRecord, 'groups'>): Promise<UserAccess> {
    if (isAdmin(user) || user.groups.length === 0 || !this.policies.stored)
      return Promise.resolve(UserAccess.UNLIMITED);
    const key = [...user.groups].sort().join('\n');
    const now = this.now();
    const hit = this.remembered.get(key);
    if (hit && hit.until > now) return hit.access;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    const access = this.read(user.groups);
    this.remembered.set(key, { until: now + ACCESS_TTL_MS, access });
    access.catch(() => {
      if (this.remembered.get(key)?.access === access) this.remembered.delete(key);
    });
    return access;
  }

  private async read(groups: readonly string[]): Promise<UserAccess> {
    const user = { groups };
    const policies = await this.policies.of(user.groups);
    const byGroup = new Map(policies.map((p) => [p.group, p]));
    const scoped = user.groups.every((g) => byGroup.get(g)?.clientGroups != null);
    let scope = ClientScope.ALL;
    if (scoped) {
      const ids = new Set(policies.flatMap((p) => p.clientGroups ?? []));
      scope = ClientScope.limitedTo(this.members, await this.members.memberSets([...ids]));
    }
    // A group without a row has no restrictions: it allows every command and tunnel.
    const unrestricted: StoredGroupPolicy[] = user.groups
      .filter((g) => !byGroup.has(g))
      .map((group) => ({ group, clientGroups: null, commandsRestricted: {}, tunnelsRestricted: {} }));
    const all = [...policies, ...unrestricted];
    let group = '';
    try {
      const commands = all.map((p) => {
        group = p.group;
        return compileCommandRule(p.group, p.commandsRestricted);
      });
      const tunnels = all.map((p) => {
        group = p.group;
        return compileTunnelRule(p.group, p.tunnelsRestricted);
      });
      return new UserAccess(scope, new CommandRestriction(commands), new TunnelRestriction(tunnels));
    } catch (err) {
      // Written around the API (PUT validates): refuse rather than run unchecked.
      throw storedPolicyInvalid(group, (err as Error).message);
    }
  }
}
