import {
  Badge,
  Button,
  Group,
  Modal,
  PasswordInput,
  Stack,
  Table,
  TagsInput,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { adminApi, meQuery, usersQuery, type UserItem, type WriteOutcome } from '../api/admin.js';
import { ConfirmModal } from '../components/confirm-modal.js';
import { FormDialog } from '../components/form-dialog.js';
import { PageError } from '../components/page-error.js';
import { TwoFaStateText } from '../components/two-fa-state.js';
import { WriteOutcomeAlert } from '../components/write-outcome.js';
import { UserGroups } from '../components/user-groups.js';
import { ADMINISTRATORS, cleanGroups } from '../lib/rights.js';

type Dialog = { kind: 'create' } | { kind: 'edit'; user: UserItem };

function UserForm({
  dialog,
  knownGroups,
  onSaved,
}: {
  dialog: Dialog;
  knownGroups: string[];
  onSaved: (outcome: WriteOutcome, done: string) => void;
}) {
  const editing = dialog.kind === 'edit' ? dialog.user : undefined;
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [groups, setGroups] = useState<string[]>(editing?.groups ?? []);
  const [sendTo, setSendTo] = useState('');
  const submit = async () => {
    const cleaned = cleanGroups(groups);
    if (editing) {
      const outcome = await adminApi.updateUser(editing.username, {
        groups: cleaned,
        ...(password ? { password } : {}),
        ...(sendTo ? { two_fa_send_to: sendTo } : {}),
      });
      onSaved(outcome, `User ${editing.username} changed.`);
    } else {
      const outcome = await adminApi.createUser({
        username: username.trim(),
        password,
        groups: cleaned,
        ...(sendTo ? { two_fa_send_to: sendTo } : {}),
      });
      onSaved(outcome, `User ${username.trim()} created.`);
    }
  };
  return (
    <FormDialog submitLabel={editing ? 'Save changes' : 'Create user'} submit={submit}>
      {editing && (
        <Group gap="xs" data-testid="user-2fa-detail">
          <Text size="sm" fw={500}>
            Two-factor login:
          </Text>
          <TwoFaStateText state={editing.two_fa} />
        </Group>
      )}
      {!editing && (
        <TextInput
          label="Username"
          required
          autoComplete="off"
          value={username}
          onChange={(e) => setUsername(e.currentTarget.value)}
        />
      )}
      <PasswordInput
        label={editing ? 'New password' : 'Password'}
        description={editing ? 'Leave empty to keep the current one.' : '8 to 72 bytes.'}
        required={!editing}
        autoComplete="new-password"
        value={password}
        onChange={(e) => setPassword(e.currentTarget.value)}
      />
      <TagsInput
        label="Groups"
        description={`Type a name and press Enter. ${ADMINISTRATORS} may manage users, credentials and the vault.`}
        data={knownGroups}
        value={groups}
        onChange={setGroups}
        clearable
      />
      <TextInput
        label="Two-factor address (two_fa_send_to)"
        description={
          editing
            ? 'Where login codes go; leave empty to keep the current one.'
            : 'Where login codes go (e-mail address or Pushover key) when two-factor login by code is on.'
        }
        value={sendTo}
        onChange={(e) => setSendTo(e.currentTarget.value)}
      />
    </FormDialog>
  );
}

export function UsersPage() {
  const queryClient = useQueryClient();
  const users = useQuery(usersQuery);
  const me = useQuery(meQuery);
  const [dialog, setDialog] = useState<Dialog>();
  const [deleting, setDeleting] = useState<UserItem>();
  const [resetting, setResetting] = useState<UserItem>();
  const [filter, setFilter] = useState('');
  const [outcome, setOutcome] = useState<{ outcome: WriteOutcome; done: string }>();
  const knownGroups = cleanGroups([ADMINISTRATORS, ...(users.data ?? []).flatMap((u) => u.groups)]);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['users'] });
  const saved = (result: WriteOutcome, done: string) => {
    setOutcome({ outcome: result, done });
    setDialog(undefined);
    void refresh();
  };
  const shown = (users.data ?? []).filter(
    (u) =>
      !filter ||
      u.username.toLowerCase().includes(filter.toLowerCase()) ||
      u.groups.some((g) => g.toLowerCase().includes(filter.toLowerCase())),
  );
  const totp = me.data?.totp_enabled === true;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Users
        </Title>
        {!users.error && <Button onClick={() => setDialog({ kind: 'create' })}>Add user</Button>}
      </Group>
      {users.error ? (
        <PageError error={users.error} />
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Who may log in to svcd, and their groups.{' '}
            {me.data?.two_fa_enabled
              ? totp
                ? 'Logins ask for an authenticator-app code; reset a user’s app when they lose it.'
                : 'Logins ask for a code sent to each user’s two-factor address.'
              : 'Two-factor login is off on this server.'}
          </Text>
          {outcome && <WriteOutcomeAlert outcome={outcome.outcome} done={outcome.done} />}
          <TextInput
            label="Filter"
            placeholder="Name or group"
            value={filter}
            onChange={(e) => setFilter(e.currentTarget.value)}
            maw={320}
          />
          {users.isPending ? (
            <Text c="dimmed">Loading users…</Text>
          ) : shown.length === 0 ? (
            <Text c="dimmed">No user matches “{filter}”. Clear the filter or add a user.</Text>
          ) : (
            <Table.ScrollContainer minWidth={640}>
              <Table striped highlightOnHover>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Username</Table.Th>
                    <Table.Th>Groups</Table.Th>
                    <Table.Th>Two-factor</Table.Th>
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {shown.map((user) => (
                    <Table.Tr key={user.username} data-testid="user-row">
                      <Table.Td fw={500}>{user.username}</Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          {user.groups.length === 0 && <Text c="dimmed">none</Text>}
                          {user.groups.map((group) => (
                            <Badge
                              key={group}
                              variant={group === ADMINISTRATORS ? 'filled' : 'light'}
                              tt="none"
                              size="sm"
                            >
                              {group}
                            </Badge>
                          ))}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <TwoFaStateText state={user.two_fa} />
                      </Table.Td>
                      <Table.Td>
                        <Group gap="xs" justify="flex-end" wrap="nowrap">
                          <Button
                            size="xs"
                            variant="default"
                            onClick={() => setDialog({ kind: 'edit', user })}
                            aria-label={`Edit ${user.username}`}
                          >
                            Edit
                          </Button>
                          {totp && (
                            <Button
                              size="xs"
                              variant="default"
                              onClick={() => setResetting(user)}
                              aria-label={`Reset the authenticator app of ${user.username}`}
                            >
                              Reset app
                            </Button>
                          )}
                          <Button
                            size="xs"
                            color="red"
                            variant="light"
                            onClick={() => setDeleting(user)}
                            aria-label={`Delete ${user.username}`}
                          >
                            Delete
                          </Button>
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
        </>
      )}
      {!users.error && <UserGroups />}
      <Modal
        opened={dialog !== undefined}
        onClose={() => setDialog(undefined)}
        title={dialog?.kind === 'edit' ? `Edit ${dialog.user.username}` : 'Add a user'}
      >
        {dialog && (
          <UserForm
            key={dialog.kind === 'edit' ? dialog.user.username : ''}
            dialog={dialog}
            knownGroups={knownGroups}
            onSaved={saved}
          />
        )}
      </Modal>
      <ConfirmModal
        opened={deleting !== undefined}
        title={`Delete ${deleting?.username ?? ''}?`}
        confirmLabel="Delete user"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          const result = await adminApi.deleteUser(deleting.username);
          saved(result, `User ${deleting.username} deleted.`);
        }}
      >
        {deleting?.username} can no longer log in, and their API tokens are removed with them.
      </ConfirmModal>
      <ConfirmModal
        opened={resetting !== undefined}
        title={`Reset the authenticator app of ${resetting?.username ?? ''}?`}
        confirmLabel="Reset app"
        onClose={() => setResetting(undefined)}
        onConfirm={async () => {
          if (!resetting) return;
          await adminApi.resetTotp(resetting.username);
          setOutcome({ outcome: {}, done: `${resetting.username} sets up a new app at their next login.` });
          await refresh();
        }}
      >
        Their current app stops working; at the next login they scan a new QR code.
      </ConfirmModal>
    </Stack>
  );
}
