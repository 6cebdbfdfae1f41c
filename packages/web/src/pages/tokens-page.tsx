import {
  Badge,
  Button,
  Code,
  Group,
  Modal,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { adminApi, apiTokensQuery, meQuery, type ApiTokenItem, type CreatedApiToken } from '../api/admin.js';
import { ConfirmModal } from '../components/confirm-modal.js';
import { FormDialog } from '../components/form-dialog.js';
import { PageError } from '../components/page-error.js';
import { SecretOnce } from '../components/secret-once.js';
import { TimeAgo } from '../components/time-ago.js';
import { isAdministrator } from '../lib/rights.js';
import { expiryFor, isExpired, TOKEN_EXPIRY_CHOICES } from '../lib/secrets.js';

const SCOPES = [
  { value: 'read', label: 'read — GET requests only' },
  { value: 'read+write', label: 'read+write — everything you may do' },
  { value: 'clients-auth', label: 'clients-auth — only client credentials' },
];

function ExpiryFields({
  choice,
  date,
  onChoice,
  onDate,
  label,
}: {
  choice: string;
  date: string;
  onChoice: (value: string) => void;
  onDate: (value: string) => void;
  label: string;
}) {
  return (
    <>
      <Select
        label={label}
        data={TOKEN_EXPIRY_CHOICES.map((c) => ({ value: c.value, label: c.label }))}
        value={choice}
        onChange={(value) => onChoice(value ?? '365')}
        allowDeselect={false}
      />
      {choice === 'date' && (
        <TextInput
          type="date"
          label="Expiry date"
          description="The token works until the end of this day (your time zone)."
          required
          value={date}
          onChange={(e) => onDate(e.currentTarget.value)}
        />
      )}
    </>
  );
}

/** Create, then show the secret once; closing the dialog drops it. */
function CreateTokenDialog({ admin, onClose }: { admin: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [scope, setScope] = useState('read');
  const [choice, setChoice] = useState('90');
  const [date, setDate] = useState('');
  const me = useQuery(meQuery);
  const submit = async () => {
    const expires = expiryFor(choice, date, Date.now());
    if (!expires) throw new Error('Choose an expiry date in the future.');
    const token = await adminApi.createToken({
      name: name.trim(),
      scope: scope as CreatedApiToken['scope'],
      expires_at: expires,
    });
    void queryClient.invalidateQueries({ queryKey: ['api-tokens'] });
    return token;
  };
  return (
    <FormDialog
      submitLabel="Create token"
      submit={submit}
      onDone={onClose}
      shownOnce={(created) => (
        <>
          <Text size="sm">
            Token <b>{created.name}</b> ({created.scope}) is ready. Use it as the password of HTTP Basic with
            your username:
          </Text>
          <Code
            block
          >{`curl -u ${me.data?.username ?? 'USERNAME'}:TOKEN ${location.origin}/api/v1/status`}</Code>
          <SecretOnce
            value={created.token}
            label="token"
            warning="svcd keeps only a hash of it: once this dialog is closed, nobody can show it again. Lost tokens are revoked and replaced."
          />
        </>
      )}
    >
      <TextInput
        label="Name"
        description="What uses it, e.g. “backup script on nas-1”."
        required
        value={name}
        onChange={(e) => setName(e.currentTarget.value)}
      />
      <Select
        label="Scope"
        data={admin ? SCOPES : SCOPES.filter((s) => s.value !== 'clients-auth')}
        value={scope}
        onChange={(value) => setScope(value ?? 'read')}
        allowDeselect={false}
      />
      <ExpiryFields choice={choice} date={date} onChoice={setChoice} onDate={setDate} label="Expires after" />
    </FormDialog>
  );
}

function EditTokenDialog({ token, onClose }: { token: ApiTokenItem; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState(token.name);
  const [choice, setChoice] = useState('keep');
  const [date, setDate] = useState('');
  const submit = async () => {
    const expires = choice === 'keep' ? undefined : expiryFor(choice, date, Date.now());
    if (choice !== 'keep' && !expires) throw new Error('Choose an expiry date in the future.');
    await adminApi.updateToken(token.prefix, {
      ...(name.trim() !== token.name ? { name: name.trim() } : {}),
      ...(expires ? { expires_at: expires } : {}),
    });
    await queryClient.invalidateQueries({ queryKey: ['api-tokens'] });
    onClose();
  };
  return (
    <FormDialog submitLabel="Save" submit={submit}>
      <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
      <Select
        label="Expiry"
        data={[
          { value: 'keep', label: 'Keep the current one' },
          ...TOKEN_EXPIRY_CHOICES.map((c) => ({ value: c.value, label: `${c.label} from now` })),
        ]}
        value={choice}
        onChange={(value) => setChoice(value ?? 'keep')}
        allowDeselect={false}
      />
      {choice === 'date' && (
        <TextInput
          type="date"
          label="Expiry date"
          required
          value={date}
          onChange={(e) => setDate(e.currentTarget.value)}
        />
      )}
    </FormDialog>
  );
}

export function TokensPage() {
  const queryClient = useQueryClient();
  const tokens = useQuery(apiTokensQuery);
  const me = useQuery(meQuery);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<ApiTokenItem>();
  const [revoking, setRevoking] = useState<ApiTokenItem>();
  const [revoked, setRevoked] = useState<string>();
  const now = Date.now();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          API tokens
        </Title>
        <Button onClick={() => setCreating(true)}>Create token</Button>
      </Group>
      <Text size="sm" c="dimmed">
        Personal tokens for scripts: sent as the password of HTTP Basic with your username, they keep working
        with two-factor login on. Each has a scope and an expiry; revoke one as soon as it is no longer
        needed.
      </Text>
      {revoked && (
        <Text size="sm" role="status">
          Token {revoked} revoked.
        </Text>
      )}
      {tokens.error ? (
        <PageError error={tokens.error} />
      ) : tokens.isPending ? (
        <Text c="dimmed">Loading tokens…</Text>
      ) : tokens.data.length === 0 ? (
        <Text c="dimmed" data-testid="tokens-empty">
          You have no API tokens. Create one for each script or tool that calls svcd’s API.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={720}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Prefix</Table.Th>
                <Table.Th>Scope</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {tokens.data.map((token) => (
                <Table.Tr key={token.prefix} data-testid="token-row">
                  <Table.Td fw={500}>{token.name}</Table.Td>
                  <Table.Td ff="monospace">{token.prefix}</Table.Td>
                  <Table.Td>
                    <Badge variant="light" tt="none" size="sm">
                      {token.scope}
                    </Badge>
                  </Table.Td>
                  <Table.Td>
                    <TimeAgo iso={token.created_at} />
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <TimeAgo iso={token.expires_at} />
                      {isExpired(token.expires_at, now) && (
                        <Badge color="red.9" size="sm">
                          expired
                        </Badge>
                      )}
                    </Group>
                  </Table.Td>
                  <Table.Td data-testid="token-last-used">
                    {token.last_used_at ? (
                      <TimeAgo iso={token.last_used_at} />
                    ) : (
                      <Text span c="dimmed" size="sm">
                        never
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs" justify="flex-end" wrap="nowrap">
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => setEditing(token)}
                        aria-label={`Edit token ${token.name}`}
                      >
                        Edit
                      </Button>
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        onClick={() => setRevoking(token)}
                        aria-label={`Revoke token ${token.name}`}
                      >
                        Revoke
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Modal opened={creating} onClose={() => setCreating(false)} title="Create an API token">
        {creating && (
          <CreateTokenDialog admin={isAdministrator(me.data?.groups)} onClose={() => setCreating(false)} />
        )}
      </Modal>
      <Modal opened={editing !== undefined} onClose={() => setEditing(undefined)} title="Change a token">
        {editing && <EditTokenDialog token={editing} onClose={() => setEditing(undefined)} />}
      </Modal>
      <ConfirmModal
        opened={revoking !== undefined}
        title={`Revoke ${revoking?.name ?? ''}?`}
        confirmLabel="Revoke token"
        onClose={() => setRevoking(undefined)}
        onConfirm={async () => {
          if (!revoking) return;
          await adminApi.revokeToken(revoking.prefix);
          setRevoked(revoking.name);
          await queryClient.invalidateQueries({ queryKey: ['api-tokens'] });
        }}
      >
        Whatever uses it gets 401 from now on. This cannot be undone.
      </ConfirmModal>
    </Stack>
  );
}
