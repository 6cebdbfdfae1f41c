import { Fieldset, SimpleGrid, Stack, Switch, TagsInput, Text, Textarea } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { clientGroupsQuery } from '../api/group-queries.js';
import type { PolicyForm, TunnelRuleForm } from '../lib/group-policy-form.js';

const MONOSPACE = { input: { fontFamily: 'var(--mantine-font-family-monospace)' } };

function TunnelRuleFields({
  legend,
  rule,
  set,
}: {
  legend: string;
  rule: TunnelRuleForm;
  set: (rule: TunnelRuleForm) => void;
}) {
  return (
    <Fieldset legend={legend} variant="filled">
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <TagsInput
          label={`${legend}: schemes`}
          placeholder="ssh"
          value={rule.scheme}
          onChange={(scheme) => set({ ...rule, scheme })}
        />
        <TagsInput
          label={`${legend}: remote ports`}
          placeholder="22 or 8000-8100"
          value={rule.remote}
          onChange={(remote) => set({ ...rule, remote })}
        />
        <TagsInput
          label={`${legend}: ACL networks`}
          placeholder="10.0.0.0/8"
          value={rule.acl}
          onChange={(acl) => set({ ...rule, acl })}
        />
      </SimpleGrid>
    </Fieldset>
  );
}

/**
 * The client scope and the command and tunnel restrictions of a user group (README "Client scope and
 * restrictions of user groups"); the user-group editor sends them with the permissions.
 */
export function GroupPolicyFields({
  value,
  set,
}: {
  value: PolicyForm;
  set: (next: Partial<PolicyForm>) => void;
}) {
  const groups = useQuery(clientGroupsQuery(''));
  const known = (groups.data?.data ?? []).map((g) => g.id);
  return (
    <Stack gap="sm">
      <Fieldset legend="Client scope">
        <Stack gap="xs">
          <Switch
            label="Limit members to some client groups"
            description="A user whose every group is limited sees only the clients of those client groups."
            checked={value.scoped}
            onChange={(e) => set({ scoped: e.currentTarget.checked })}
          />
          {value.scoped && (
            <TagsInput
              label="Client groups"
              description="None: its members reach no client."
              data={known}
              value={value.clientGroups}
              onChange={(clientGroups) => set({ clientGroups })}
            />
          )}
        </Stack>
      </Fieldset>
      <Fieldset legend="Commands">
        <Stack gap="xs">
          <Text size="xs" c="dimmed">
            JavaScript regular expressions, one per line. A command must match an allowed one (none: any) and
            no denied one; deny wins.
          </Text>
          <Textarea
            label="Allowed commands"
            autosize
            minRows={2}
            styles={MONOSPACE}
            value={value.allowCommands}
            onChange={(e) => set({ allowCommands: e.currentTarget.value })}
          />
          <Textarea
            label="Denied commands"
            autosize
            minRows={2}
            styles={MONOSPACE}
            value={value.denyCommands}
            onChange={(e) => set({ denyCommands: e.currentTarget.value })}
          />
        </Stack>
      </Fieldset>
      <Fieldset legend="Tunnels">
        <Stack gap="xs">
          <Text size="xs" c="dimmed">
            Press Enter after each entry. Allow limits each part given; a tunnel matching any deny entry is
            refused.
          </Text>
          <TunnelRuleFields
            legend="Allow"
            rule={value.tunnelAllow}
            set={(tunnelAllow) => set({ tunnelAllow })}
          />
          <TunnelRuleFields legend="Deny" rule={value.tunnelDeny} set={(tunnelDeny) => set({ tunnelDeny })} />
        </Stack>
      </Fieldset>
    </Stack>
  );
}
