import {
  Alert,
  Badge,
  Button,
  Card,
  Group,
  Loader,
  PasswordInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { apiRequest } from '../api/client.js';
import { vaultStatusQuery } from '../api/queries.js';
import type { VaultStatus } from '../api/types.js';
import { vaultEntriesQuery } from '../api/vault-queries.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink, ButtonLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { useAllows } from '../session/use-rights.js';

/** After any change of the vault's state: its status and everything read from it are stale or gone. */
function useVaultChanged() {
  const queryClient = useQueryClient();
  return async () => {
    queryClient.removeQueries({ queryKey: ['vault-entry-value'] });
    await queryClient.invalidateQueries({ queryKey: ['vault-status'] });
    await queryClient.invalidateQueries({ queryKey: ['vault-entries'] });
  };
}

function InitForm() {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const changed = useVaultChanged();
  const init = useMutation({
    mutationFn: () => apiRequest<void>('/vault-admin/init', { method: 'POST', body: { password } }),
    onSuccess: changed,
  });
  const mismatch = confirm !== '' && confirm !== password;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (password === confirm) init.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Set up the vault">
      <Stack gap="sm">
        <Text>
          The vault is not set up. An administrator chooses its password (4 to 32 bytes); it is needed to
          unlock the vault after every svcd restart and cannot be recovered.
        </Text>
        <PasswordInput
          label="Vault password"
          required
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
        />
        <PasswordInput
          label="Confirm the password"
          required
          autoComplete="new-password"
          value={confirm}
          error={mismatch ? 'The two passwords differ' : undefined}
          onChange={(e) => setConfirm(e.currentTarget.value)}
        />
        {init.error && <ErrorAlert error={init.error} title="The vault was not set up" />}
        <Group>
          <Button type="submit" loading={init.isPending} disabled={password === '' || password !== confirm}>
            Set up the vault
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function UnlockForm() {
  const [password, setPassword] = useState('');
  const changed = useVaultChanged();
  const unlock = useMutation({
    mutationFn: () => apiRequest<void>('/vault-admin/sesame', { method: 'POST', body: { password } }),
    onSuccess: async () => {
      setPassword('');
      await changed();
    },
  });
  return (
    <form
      aria-label="Unlock the vault"
      onSubmit={(event) => {
        event.preventDefault();
        unlock.mutate();
      }}
    >
      <Stack gap="sm">
        <Text>
          The vault is locked: its entries cannot be read or changed until an administrator unlocks it.
        </Text>
        <PasswordInput
          label="Vault password"
          required
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
        />
        {unlock.error && <ErrorAlert error={unlock.error} title="The vault stays locked" />}
        <Group>
          <Button type="submit" loading={unlock.isPending}>
            Unlock
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function LockButton() {
  const changed = useVaultChanged();
  const lock = useMutation({
    mutationFn: () => apiRequest<void>('/vault-admin/sesame', { method: 'DELETE' }),
    onSuccess: changed,
  });
  return (
    <Stack gap="xs">
      <Group>
        <Button variant="light" color="orange" loading={lock.isPending} onClick={() => lock.mutate()}>
          Lock the vault
        </Button>
      </Group>
      {lock.error && <ErrorAlert error={lock.error} title="The vault was not locked" />}
    </Stack>
  );
}

function StatusCard({ status }: { status: VaultStatus }) {
  const ready = status.init === 'setup-completed';
  const label = !ready ? 'not set up' : status.status;
  const color = !ready ? 'gray' : status.status === 'unlocked' ? 'green' : 'orange';
  return (
    <Card withBorder padding="lg">
      <Stack gap="sm">
        <Group gap="sm">
          <Title order={2} size="h4">
            Status
          </Title>
          <Badge color={color} variant="filled" miw="max-content" data-testid="vault-page-state">
            {label}
          </Badge>
        </Group>
        {!ready ? <InitForm /> : status.status === 'locked' ? <UnlockForm /> : <LockButton />}
      </Stack>
    </Card>
  );
}

function Entries() {
  const [text, setText] = useState('');
  const [q] = useDebouncedValue(text.trim(), 250);
  const entries = useQuery({ ...vaultEntriesQuery(q), placeholderData: keepPreviousData });
  const mayWrite = useAllows('vault');
  const rows = entries.data?.data ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="end">
        <Title order={2} size="h3">
          Entries
        </Title>
        {mayWrite && <ButtonLink to="/vault/new">New entry</ButtonLink>}
      </Group>
      <Group align="end">
        <TextInput
          label="Search by key or client id"
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
        />
        {entries.isFetching && <Loader size="xs" role="status" aria-label="Loading entries" />}
      </Group>
      {entries.error && <ErrorAlert error={entries.error} />}
      {entries.data && (
        <Text size="sm" c="dimmed" aria-live="polite">
          {entries.data.meta.count} {entries.data.meta.count === 1 ? 'entry' : 'entries'}
        </Text>
      )}
      {entries.data && rows.length === 0 ? (
        <Text>
          {q
            ? 'No entry matches. Change the search.'
            : 'The vault holds no entry yet. Add one with "New entry".'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={560}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Key</Table.Th>
                <Table.Th>Client</Table.Th>
                <Table.Th>Created by</Table.Th>
                <Table.Th>Created</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((entry) => (
                <Table.Tr key={entry.id}>
                  <Table.Td>
                    <AnchorLink to="/vault/$entryId" params={{ entryId: String(entry.id) }}>
                      {entry.key}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>{entry.client_id || <Text c="dimmed">any client</Text>}</Table.Td>
                  <Table.Td>{entry.created_by}</Table.Td>
                  <Table.Td>
                    <TimeAgo iso={entry.created_at} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}

/** The vault: its state (set up, unlock, lock) and, while unlocked, its entries. */
export function VaultPage() {
  const status = useQuery(vaultStatusQuery);
  return (
    <Stack>
      <Title order={1}>Vault</Title>
      {status.isPending && <Loader role="status" aria-label="Loading the vault's state" />}
      {status.error && <ErrorAlert error={status.error} />}
      {status.data && <StatusCard status={status.data} />}
      {status.data?.status === 'unlocked' ? (
        <Entries />
      ) : (
        status.data && (
          <Alert color="gray" title="Entries">
            {status.data.init === 'uninitialized'
              ? 'Entries can be stored once the vault is set up.'
              : 'Entries are listed once the vault is unlocked.'}
          </Alert>
        )
      )}
    </Stack>
  );
}
