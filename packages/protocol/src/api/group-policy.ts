import { z } from 'zod';
import { clientGroupIdSchema } from './client-groups.js';
import { MAX_TUNNEL_SCHEME_LENGTH } from './tunnels.js';

/**
 * What a user group may reach and do beyond its permissions (issue 28 §2, §3), as the user-group API takes and
 * shows it. Stored in the spec's `group_details` row of the group: `client_groups` inside the `permissions`
 * JSON, the restrictions in `commands_restricted` and `tunnels_restricted`.
 */

/** Patterns per allow or deny list, and the length of one pattern (bounds the work of checking a command). */
export const MAX_RESTRICTION_PATTERNS = 32;
export const MAX_RESTRICTION_PATTERN_LENGTH = 256;
/** Client groups one user group may be scoped to. */
export const MAX_SCOPE_CLIENT_GROUPS = 100;

/**
 * The client groups a user group is limited to; null (or absent) = not limited. An empty list limits it to
 * no client at all.
 */
export const clientGroupScopeSchema = z
  .array(clientGroupIdSchema)
  .max(MAX_SCOPE_CLIENT_GROUPS, `at most ${MAX_SCOPE_CLIENT_GROUPS} client groups`)
  .nullable();

const patternList = z
  .array(
    z
      .string()
      .min(1, 'a pattern must not be empty')
      .max(
        MAX_RESTRICTION_PATTERN_LENGTH,
        `a pattern has at most ${MAX_RESTRICTION_PATTERN_LENGTH} characters`,
      ),
  )
  .max(MAX_RESTRICTION_PATTERNS, `at most ${MAX_RESTRICTION_PATTERNS} patterns`);

/**
 * `commands_restricted`: JavaScript regular expressions, unanchored unless the pattern anchors. `allow` present:
 * a command must match one of them; `deny`: a command matching one is refused, whatever allows it.
 */
export const commandsRestrictedSchema = z.strictObject({
  allow: patternList.optional(),
  deny: patternList.optional(),
});
export type CommandsRestricted = z.infer<typeof commandsRestrictedSchema>;

/** A remote port (22) or an inclusive range ("8000-8100"). */
export const portRuleSchema = z.union([
  z.int().min(1).max(65535),
  z.string().regex(/^\d{1,5}(-\d{1,5})?$/, 'a port (22) or a range ("8000-8100")'),
]);

const tunnelRuleSchema = z.strictObject({
  /** URI schemes (the tunnel's `scheme`), compared case-insensitively. */
  scheme: z.array(z.string().min(1).max(MAX_TUNNEL_SCHEME_LENGTH)).max(64).optional(),
  /** Ports of the tunnel's `remote` on the client. */
  remote: z.array(portRuleSchema).max(64).optional(),
  /** IPv4/IPv6 addresses or CIDRs, as in a tunnel's `acl`. */
  acl: z.array(z.string().min(1).max(64)).max(64).optional(),
});
export type TunnelRule = z.infer<typeof tunnelRuleSchema>;

/**
 * `tunnels_restricted`: `allow` — each key present limits that part of a tunnel to its list (`acl`: the
 * tunnel must have an ACL, and each of its entries must lie inside a listed network); `deny` — a tunnel with
 * a denied scheme or remote port, or whose ACL admits any address of a denied network (no ACL admits all),
 * is refused whatever allows it.
 */
export const tunnelsRestrictedSchema = z.strictObject({
  allow: tunnelRuleSchema.optional(),
  deny: tunnelRuleSchema.optional(),
});
export type TunnelsRestricted = z.infer<typeof tunnelsRestrictedSchema>;

/** The scope and restriction fields of a user group, as `PUT /user-groups/{name}` takes them. */
export const groupPolicyBodySchema = z.object({
  client_groups: clientGroupScopeSchema.optional(),
  commands_restricted: commandsRestrictedSchema.optional(),
  tunnels_restricted: tunnelsRestrictedSchema.optional(),
});
export type GroupPolicyBody = z.infer<typeof groupPolicyBodySchema>;
