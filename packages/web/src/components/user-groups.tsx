import { Badge, Button, Checkbox, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { ERROR_CODES, PERMISSION_DESCRIPTIONS, PERMISSIONS, type Permission } from '@svc/protocol';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { adminApi, userGroupsQuery, type UserGroupItem } from '../api/admin.js';
import { ApiError } from '../api/api-error.js';
import { policyBodyOf, policyFormOf, policySummary, type PolicyForm } from '../lib/group-policy-form.js';
import { ADMINISTRATORS } from '../lib/rights.js';
import { ConfirmModal } from './confirm-modal.js';
import { ErrorAlert } from './error-alert.js';
import { FormDialog } from './form-dialog.js';
import { GroupPolicyFields } from './group-policy-fields.js';

type Editing = { name: string; granted: Permission[]; policy: PolicyForm; isNew: boolean };

const grantedOf = (group: UserGroupItem): Permission[] => PERMISSIONS.filter((p) => group.permissions[p]);

/** A group's permissions, client scope and restrictions, saved at once (PUT /user-groups/{name}). */
function GroupForm({ editing, onSaved }: { editing: Editing; onSaved: (name: string) => void }) {
  const [name, setName] = useState(editing.name);
  const [granted, setGranted] = useState<string[]>(editing.granted);
  const [policy, setPolicy] = useState(editing.policy);
  const submit = async () => {
    const group = name.trim();
    await adminApi.saveUserGroup(group, {
      permissions: Object.fromEntries(PERMISSIONS.map((p) => [p, granted.includes(p)])),
      ...policyBodyOf(policy),
    });
    onSaved(group);
  };
  return (
    <FormDialog submitLabel="Save group" submit={submit}>
      {editing.isNew && (
        <TextInput
          label="Group name"
          required
          autoComplete="off"
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
        />
      )}
      <Checkbox.Group label="Permissions" value={granted} onChange={setGranted}>
        <Stack gap="xs" mt="xs">
          {PERMISSIONS.map((p) => (
            <Checkbox key={p} value={p} label={p} description={PERMISSION_DESCRIPTIONS[p]} />
          ))}
        </Stack>
      </Checkbox.Group>
      <GroupPolicyFields value={policy} set={(next) => setPolicy((p) => ({ ...p, ...next }))} />
    </FormDialog>
  );
}

/**
 * The user groups with their permissions (GET /user-groups): edit with checkboxes, delete. With group permissions
 * off (no [api] group_details_table) svcd answers 400 and this says so.
 */
export function UserGroups() {
  const queryClient = useQueryClient();
  const groups = useQuery(userGroupsQuery);
  const [editing, setEditing] = useState<Editing>();
  const [deleting, setDeleting] = useState<string>();
  const [done, setDone] = useState<string>();
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: ['user-groups'] }),
      queryClient.invalidateQueries({ queryKey: ['users'] }),
    ]);
  const off = groups.error instanceof ApiError && groups.error.code === ERROR_CODES.groupPermissionsOff;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          User groups
        </Title>
        {groups.data && (
          <Button
            variant="default"
            onClick={() =>
              setEditing({ name: '', granted: [], policy: policyFormOf(undefined), isNew: true })
            }
          >
            Add group
          </Button>
        )}
      </Group>
      {off ? (
        <Text size="sm" c="dimmed" data-testid="group-permissions-off">
          Group permissions are off: every user outside {ADMINISTRATORS} may do everything but read the audit
          log. They need database user tables with [api] group_details_table.
        </Text>
      ) : groups.error ? (
        <ErrorAlert error={groups.error} />
      ) : (
        <>
          <Text size="sm" c="dimmed">
            What the members of each group may do; a user has what any of their groups grants. A group without
            permissions grants nothing. A user sees only the clients of their groups' client groups when every
            group of theirs is limited; command and tunnel rules of all their groups apply. {ADMINISTRATORS}{' '}
            may do everything.
          </Text>
          {done && (
            <Text size="sm" role="status">
              {done}
            </Text>
          )}
          <Table.ScrollContainer minWidth={520}>
            <Table striped>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Group</Table.Th>
                  <Table.Th>Permissions</Table.Th>
                  <Table.Th>Limits</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(groups.data ?? []).map((group) => (
                  <Table.Tr key={group.name} data-testid="user-group-row">
                    <Table.Td fw={500}>{group.name}</Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {grantedOf(group).length === 0 && <Text c="dimmed">none</Text>}
                        {grantedOf(group).map((p) => (
                          <Badge key={p} variant="light" tt="none" size="sm">
                            {p}
                          </Badge>
                        ))}
                      </Group>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{group.name === ADMINISTRATORS ? 'none' : policySummary(group)}</Text>
                    </Table.Td>
                    <Table.Td>
                      {group.name !== ADMINISTRATORS && (
                        <Group gap="xs" wrap="nowrap">
                          <Button
                            size="xs"
                            variant="default"
                            aria-label={`Edit the group ${group.name}`}
                            onClick={() =>
                              setEditing({
                                name: group.name,
                                granted: grantedOf(group),
                                policy: policyFormOf(group),
                                isNew: false,
                              })
                            }
                          >
                            Edit
                          </Button>
                          <Button
                            size="xs"
                            color="red"
                            variant="light"
                            aria-label={`Delete the group ${group.name}`}
                            onClick={() => setDeleting(group.name)}
                          >
                            Delete
                          </Button>
                        </Group>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </>
      )}
      <Modal
        opened={editing !== undefined}
        onClose={() => setEditing(undefined)}
        size="lg"
        title={editing?.isNew ? 'Add a user group' : `Group ${editing?.name ?? ''}`}
      >
        {editing && (
          <GroupForm
            key={editing.name}
            editing={editing}
            onSaved={(name) => {
              setEditing(undefined);
              setDone(`Group ${name} saved.`);
              void refresh();
            }}
          />
        )}
      </Modal>
      <ConfirmModal
        opened={deleting !== undefined}
        title={`Delete the group ${deleting ?? ''}?`}
        confirmLabel="Delete group"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (deleting === undefined) return;
          await adminApi.deleteUserGroup(deleting);
          setDone(`Group ${deleting} deleted.`);
          await refresh();
        }}
      >
        Its permissions go, and every user leaves the group.
      </ConfirmModal>
    </Stack>
  );
}
