import {
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Loader,
  Modal,
  Select,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { apiRequest } from '../api/client.js';
import {
  readVaultValue,
  VAULT_TYPES,
  vaultEntryInfoQuery,
  vaultEntryValueQuery,
  type VaultEntryBody,
  type VaultEntryInfo,
} from '../api/vault-queries.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { useAllows } from '../session/use-rights.js';

const entryRoute = getRouteApi('/console/vault/$entryId');

type EntryForm = Required<VaultEntryBody>;

const EMPTY: EntryForm = { client_id: '', required_group: '', key: '', value: '', type: 'secret' };

function EntryFields({
  initial,
  submitLabel,
  pending,
  onSubmit,
  valueNote,
}: {
  initial: EntryForm;
  submitLabel: string;
  pending: boolean;
  onSubmit: (body: EntryForm) => void;
  valueNote?: ReactNode;
}) {
  const [form, setForm] = useState(initial);
  const set = (next: Partial<EntryForm>) => setForm((prev) => ({ ...prev, ...next }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit(form);
  };
  return (
    <form onSubmit={submit} aria-label="Vault entry">
      <Stack>
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Key"
            required
            value={form.key}
            onChange={(e) => set({ key: e.currentTarget.value })}
          />
          <Select
            label="Type"
            allowDeselect={false}
            data={[...VAULT_TYPES]}
            value={form.type}
            onChange={(type) => set({ type: type ?? 'secret' })}
          />
          <TextInput
            label="Client id"
            description="Empty: the entry belongs to no client in particular"
            value={form.client_id}
            onChange={(e) => set({ client_id: e.currentTarget.value })}
          />
          <TextInput
            label="Required user group"
            description="Empty: every user may read it; otherwise only members of this group"
            value={form.required_group}
            onChange={(e) => set({ required_group: e.currentTarget.value })}
          />
        </SimpleGrid>
        <Textarea
          label="Value"
          required
          autosize
          minRows={2}
          autoComplete="off"
          spellCheck={false}
          description={valueNote}
          value={form.value}
          onChange={(e) => set({ value: e.currentTarget.value })}
        />
        <Group>
          <Button type="submit" loading={pending}>
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** A new vault entry. */
export function NewVaultEntryPage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: (body: EntryForm) =>
      apiRequest<{ data: { id: number } }>('/vault', { method: 'POST', body }).then((r) => r.data.id),
    onSuccess: async (id) => {
      await queryClient.invalidateQueries({ queryKey: ['vault-entries'] });
      await navigate({ to: '/vault/$entryId', params: { entryId: String(id) } });
    },
  });
  return (
    <Stack>
      <AnchorLink to="/vault">← Vault</AnchorLink>
      <Title order={1}>New vault entry</Title>
      {create.error && <ErrorAlert error={create.error} title="The entry was not stored" />}
      <EntryFields
        initial={EMPTY}
        submitLabel="Store entry"
        pending={create.isPending}
        onSubmit={create.mutate}
      />
    </Stack>
  );
}

/**
 * The value, fetched when this mounts (the operator pressed Show) and removed from the query cache when it
 * unmounts (Hide, or leaving the page): a hidden value is kept nowhere in the page.
 */
function VaultValue({ id }: { id: number }) {
  const queryClient = useQueryClient();
  const value = useQuery(vaultEntryValueQuery(id));
  useEffect(
    () => () => queryClient.removeQueries({ queryKey: vaultEntryValueQuery(id).queryKey }),
    [id, queryClient],
  );
  if (value.isPending) return <Loader size="sm" role="status" aria-label="Reading the value" />;
  if (value.error) return <ErrorAlert error={value.error} title="The value cannot be read" />;
  return (
    <Stack gap="xs">
      <Code block data-testid="vault-value">
        {value.data}
      </Code>
      <CopyButton value={value.data}>
        {({ copied, copy }) => (
          <Button size="xs" variant="light" color={copied ? 'green' : undefined} onClick={copy}>
            {copied ? 'Copied' : 'Copy value'}
          </Button>
        )}
      </CopyButton>
    </Stack>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" tt="uppercase" fw={700} c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div" style={{ wordBreak: 'break-word' }}>
        {children}
      </Text>
    </div>
  );
}

function EditEntry({ info, onDone }: { info: VaultEntryInfo; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [value, setValue] = useState<string | undefined>();
  const load = useMutation({ mutationFn: () => readVaultValue(info.id), onSuccess: setValue });
  const save = useMutation({
    mutationFn: (body: EntryForm) => apiRequest<void>(`/vault/${info.id}`, { method: 'PUT', body }),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['vault-entry-value', info.id] });
      await queryClient.invalidateQueries({ queryKey: ['vault-entry-info', info.id] });
      await queryClient.invalidateQueries({ queryKey: ['vault-entries'] });
      onDone();
    },
  });
  const initial: EntryForm = {
    client_id: info.client_id,
    required_group: info.required_group,
    key: info.key,
    type: info.type,
    value: value ?? '',
  };
  return (
    <Card withBorder padding="lg">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h4">
            Edit
          </Title>
          <Button variant="default" size="xs" onClick={onDone}>
            Cancel
          </Button>
        </Group>
        {save.error && <ErrorAlert error={save.error} title="The entry was not saved" />}
        {load.error && <ErrorAlert error={load.error} title="The value cannot be read" />}
        <EntryFields
          key={value === undefined ? 'new-value' : 'loaded'}
          initial={initial}
          submitLabel="Save entry"
          pending={save.isPending}
          onSubmit={save.mutate}
          valueNote={
            <>
              Saving replaces the whole entry, value included: type a new value, or{' '}
              <Button
                variant="subtle"
                size="compact-xs"
                loading={load.isPending}
                onClick={() => load.mutate()}
              >
                load the current value
              </Button>
            </>
          }
        />
      </Stack>
    </Card>
  );
}

function DeleteEntry({ info }: { info: VaultEntryInfo }) {
  const [open, setOpen] = useState(false);
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => apiRequest<void>(`/vault/${info.id}`, { method: 'DELETE' }),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['vault-entry-info', info.id] });
      queryClient.removeQueries({ queryKey: ['vault-entry-value', info.id] });
      await queryClient.invalidateQueries({ queryKey: ['vault-entries'] });
      await navigate({ to: '/vault' });
    },
  });
  return (
    <>
      <Button color="red" variant="light" onClick={() => setOpen(true)}>
        Delete
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Delete "${info.key}"?`}>
        <Stack>
          <Text>The value is gone for good: the vault keeps no copy.</Text>
          {remove.error && <ErrorAlert error={remove.error} title="The entry was not deleted" />}
          <Group justify="end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
              Delete entry
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

/** One vault entry: its facts, the value on demand (Show / Hide, copy), edit and delete. */
export function VaultEntryPage() {
  const { entryId } = entryRoute.useParams();
  const id = Number(entryId);
  const info = useQuery({ ...vaultEntryInfoQuery(id), enabled: Number.isInteger(id) });
  const [shown, setShown] = useState(false);
  const [editing, setEditing] = useState(false);
  const mayUse = useAllows('vault');
  const data = info.data;
  return (
    <Stack>
      <AnchorLink to="/vault">← Vault</AnchorLink>
      <Group justify="space-between" align="end">
        <Title order={1}>{data?.key ?? 'Vault entry'}</Title>
        {data && !editing && mayUse && (
          <Group>
            <Button variant="default" onClick={() => setEditing(true)}>
              Edit
            </Button>
            <DeleteEntry info={data} />
          </Group>
        )}
      </Group>
      {!Number.isInteger(id) && <ErrorAlert error={new Error(`"${entryId}" is not an entry id`)} />}
      {info.isPending && Number.isInteger(id) && <Loader role="status" aria-label="Loading the entry" />}
      {info.error && <ErrorAlert error={info.error} />}
      {data && (
        <Card withBorder padding="lg">
          <SimpleGrid cols={{ base: 1, xs: 2, md: 3 }}>
            <Fact label="Type">{data.type}</Fact>
            <Fact label="Client">{data.client_id || 'any client'}</Fact>
            <Fact label="Required group">{data.required_group || 'none: every user'}</Fact>
            <Fact label="Created">
              {data.created_by}, <TimeAgo iso={data.created_at} />
            </Fact>
            <Fact label="Updated">
              {data.updated_by}, <TimeAgo iso={data.updated_at} />
            </Fact>
          </SimpleGrid>
        </Card>
      )}
      {data && (
        <Card withBorder padding="lg">
          <Stack gap="sm">
            <Group justify="space-between">
              <Title order={2} size="h4">
                Value
              </Title>
              {mayUse && (
                <Button variant="light" onClick={() => setShown((s) => !s)} aria-expanded={shown}>
                  {shown ? 'Hide' : 'Show'}
                </Button>
              )}
            </Group>
            {shown ? <VaultValue id={data.id} /> : <Text c="dimmed">Hidden. Press Show to read it.</Text>}
          </Stack>
        </Card>
      )}
      {data && editing && <EditEntry info={data} onDone={() => setEditing(false)} />}
    </Stack>
  );
}
