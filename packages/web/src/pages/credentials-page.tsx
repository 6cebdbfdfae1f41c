import {
  Alert,
  Button,
  Checkbox,
  Code,
  Group,
  Modal,
  PasswordInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError } from '../api/api-error.js';
import { adminApi, credentialsQuery, type ClientCredential } from '../api/admin.js';
import { ConfirmModal } from '../components/confirm-modal.js';
import { ErrorAlert } from '../components/error-alert.js';
import { FormDialog } from '../components/form-dialog.js';
import { PageError } from '../components/page-error.js';
import { SecretOnce } from '../components/secret-once.js';
import { generatePassword } from '../lib/secrets.js';

/** Add a credential; a generated password is shown once, with the agent's --auth line. */
function AddCredentialDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [id, setId] = useState('');
  const [password, setPassword] = useState('');
  const submit = async () => {
    await adminApi.addCredential(id, password);
    void queryClient.invalidateQueries({ queryKey: ['clients-auth'] });
    return { id, password };
  };
  return (
    <FormDialog
      submitLabel="Add credential"
      submit={submit}
      onDone={onClose}
      shownOnce={(added) => (
        <>
          <Text size="sm">
            Credential <b>{added.id}</b> added. Agents log in with it by <Code>svc --auth id:password</Code>,{' '}
            <Code>auth</Code> in their <Code>[client]</Code> section or <Code>SVC_AUTH</Code>:
          </Text>
          <SecretOnce
            value={`${added.id}:${added.password}`}
            label="agent credential"
            warning="Administrators can read it again on this page, but it is not kept in this dialog once closed."
          />
        </>
      )}
    >
      <TextInput
        label="Client-auth id"
        description="The name agents log in with (no colon)."
        required
        value={id}
        onChange={(e) => setId(e.currentTarget.value)}
      />
      <Group align="end" wrap="nowrap">
        <PasswordInput
          label="Password"
          description="8 to 100 characters."
          required
          style={{ flex: 1 }}
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
        />
        <Button variant="default" onClick={() => setPassword(generatePassword())}>
          Generate
        </Button>
      </Group>
    </FormDialog>
  );
}

function PasswordCell({ password }: { password: string }) {
  const [shown, setShown] = useState(false);
  return (
    <Group gap="xs" wrap="nowrap">
      <Text ff="monospace" size="sm">
        {shown ? password : '••••••••'}
      </Text>
      <Button size="compact-xs" variant="subtle" onClick={() => setShown(!shown)}>
        {shown ? 'Hide' : 'Show'}
      </Button>
    </Group>
  );
}

/** svcd's 400 for a static credential source: nothing to list or change through the API. */
const isStaticSource = (error: unknown) => error instanceof ApiError && error.status === 400;

export function CredentialsPage() {
  const queryClient = useQueryClient();
  const credentials = useQuery(credentialsQuery);
  const [adding, setAdding] = useState(false);
  const [deleting, setDeleting] = useState<ClientCredential>();
  const [force, setForce] = useState(false);
  const [deleted, setDeleted] = useState<string>();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Client credentials
        </Title>
        {credentials.data && <Button onClick={() => setAdding(true)}>Add credential</Button>}
      </Group>
      <Text size="sm" c="dimmed">
        The ids and passwords svc agents log in with. Several agents may share one credential.
      </Text>
      {deleted && (
        <Text size="sm" role="status">
          Credential {deleted} deleted.
        </Text>
      )}
      {credentials.error ? (
        isStaticSource(credentials.error) ? (
          <Alert
            color="blue"
            title="Client credentials are read-only here"
            data-testid="credentials-read-only"
          >
            <Text size="sm" mb="xs">
              svcd takes its agent credential from its configuration, so the console cannot list or change it.
              To manage credentials here, set <Code>auth_file</Code> or <Code>auth_table</Code> in svcd’s{' '}
              <Code>[server]</Code> section instead of <Code>auth</Code>.
            </Text>
            <ErrorAlert error={credentials.error} />
          </Alert>
        ) : (
          <PageError error={credentials.error} />
        )
      ) : credentials.isPending ? (
        <Text c="dimmed">Loading credentials…</Text>
      ) : credentials.data.length === 0 ? (
        <Text c="dimmed">No credentials yet: add one, then start agents with it.</Text>
      ) : (
        <Table.ScrollContainer minWidth={420}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Id</Table.Th>
                <Table.Th>Password</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {credentials.data.map((credential) => (
                <Table.Tr key={credential.id} data-testid="credential-row">
                  <Table.Td fw={500}>{credential.id}</Table.Td>
                  <Table.Td>
                    <PasswordCell password={credential.password} />
                  </Table.Td>
                  <Table.Td>
                    <Group justify="flex-end">
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        onClick={() => {
                          setForce(false);
                          setDeleting(credential);
                        }}
                        aria-label={`Delete credential ${credential.id}`}
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
      <Modal opened={adding} onClose={() => setAdding(false)} title="Add a client credential">
        {adding && <AddCredentialDialog onClose={() => setAdding(false)} />}
      </Modal>
      <ConfirmModal
        opened={deleting !== undefined}
        title={`Delete credential ${deleting?.id ?? ''}?`}
        confirmLabel="Delete credential"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await adminApi.deleteCredential(deleting.id, force);
          setDeleted(deleting.id);
          await queryClient.invalidateQueries({ queryKey: ['clients-auth'] });
        }}
      >
        <Stack gap="xs">
          <Text size="sm">Agents using it can no longer log in.</Text>
          <Checkbox
            label="Also when agents are connected with it (they are disconnected)"
            checked={force}
            onChange={(e) => setForce(e.currentTarget.checked)}
          />
        </Stack>
      </ConfirmModal>
    </Stack>
  );
}
