import { AppError, ERROR_CODES, groupPolicyBodySchema, type GroupPolicyBody } from '@svc/protocol';
import { compileCommandRule } from './command-restriction.js';
import type { GroupPolicyChange, GroupPolicyRepository, StoredGroupPolicy } from './ports.js';
import { compileTunnelRule } from './tunnel-restriction.js';

const invalid = (detail: string) =>
  new AppError('invalid', ERROR_CODES.invalidGroupPolicy, 'Invalid user group restrictions', detail);

/**
 * Checks the scope and restriction fields of a user group as `PUT /user-groups/{name}` takes them: the JSON
 * shape, every regular expression (compiles and has a bounded shape, see restriction-pattern.ts), every port
 * range and ACL entry. 400 ERR_INVALID_GROUP_POLICY naming the field and what is wrong, so a bad rule is
 * refused when saved rather than when a command is checked.
 */
export function validateGroupPolicy(group: string, raw: unknown): GroupPolicyChange {
  const parsed = groupPolicyBodySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`${issue?.path.join('.') || '(body)'}: ${issue?.message ?? 'invalid'}`);
  }
  const body: GroupPolicyBody = parsed.data;
  try {
    if (body.commands_restricted) compileCommandRule(group, body.commands_restricted);
  } catch (err) {
    throw invalid(`commands_restricted: ${(err as Error).message}`);
  }
  try {
    if (body.tunnels_restricted) compileTunnelRule(group, body.tunnels_restricted);
  } catch (err) {
    throw invalid(`tunnels_restricted: ${(err as Error).message}`);
  }
  return {
    ...(body.client_groups !== undefined ? { clientGroups: body.client_groups } : {}),
    ...(body.commands_restricted ? { commandsRestricted: body.commands_restricted } : {}),
    ...(body.tunnels_restricted ? { tunnelsRestricted: body.tunnels_restricted } : {}),
  };
}

/** The policies of user groups: read for access checks, saved after validation. */
export class GroupPolicies {
  private readonly saved = new Set<() => void>();

  constructor(private readonly repository: GroupPolicyRepository | undefined) {}

  /** Calls `listener` after each save through this object (AccessControl drops what it remembered). */
  onSave(listener: () => void): void {
    this.saved.add(listener);
  }

  /** Whether policies can be stored at all (the database user store with `[api] group_details_table`). */
  get stored(): boolean {
    return this.repository !== undefined;
  }

  of(groups: readonly string[]): Promise<StoredGroupPolicy[]> {
    return this.repository && groups.length > 0 ? this.repository.policiesOf(groups) : Promise.resolve([]);
  }

  /** Validates the fields given (validateGroupPolicy) and stores them; fields left out stay as they are. */
  async save(group: string, raw: unknown): Promise<void> {
    const change = validateGroupPolicy(group, raw);
    if (!this.repository)
      throw invalid('user group restrictions need the database user store with [api] group_details_table');
    await this.repository.save(group, change);
    for (const listener of this.saved) listener();
  }
}
