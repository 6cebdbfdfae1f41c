import {
  Alert,
  Button,
  Card,
  Group,
  Loader,
  Modal,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useMemo, useState, type FormEvent } from 'react';
import { apiRequest } from '../api/client.js';
import { clientGroupQuery, type ClientGroup } from '../api/group-queries.js';
import type { ClientList } from '../api/types.js';
import { StateBadge } from '../components/client-columns.js';
import { ErrorAlert } from '../components/error-alert.js';
import { GroupPreview } from '../components/group-preview.js';
import { AnchorLink } from '../components/links.js';
import { RuleEditor } from '../components/rule-editor.js';
import { hasRule, paramsOf, rowsOf, type RuleRow } from '../lib/group-rules.js';
import { useAllows } from '../session/use-rights.js';

const groupRoute = getRouteApi('/console/client-groups/$groupId');

interface GroupForm {
  id: string;
  description: string;
  rows: RuleRow[];
}

function GroupEditor({
  initial,
  isNew,
  pending,
  onSubmit,
  readOnly = false,
}: {
  initial: GroupForm;
  isNew: boolean;
  pending: boolean;
  onSubmit: (form: GroupForm) => void;
  /** Without the `client-groups` permission: the rule is shown, not saved. */
  readOnly?: boolean;
}) {
  const [form, setForm] = useState(initial);
  const params = useMemo(() => paramsOf(form.rows), [form.rows]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit(form);
  };
  // Side by side where there is room: the preview answers each change of the rule next to it.
  return (
    <SimpleGrid cols={{ base: 1, lg: 2 }} spacing="lg">
      <form onSubmit={submit} aria-label="Client group">
        <Stack>
          {isNew && (
            <TextInput
              label="Group id"
              description="Letters, digits, _ and -"
              required
              value={form.id}
              onChange={(e) => setForm({ ...form, id: e.currentTarget.value })}
            />
          )}
          <TextInput
            label="Description"
            value={form.description}
            onChange={(e) => setForm({ ...form, description: e.currentTarget.value })}
          />
          <Title order={2} size="h4">
            Rule
          </Title>
          <RuleEditor rows={form.rows} onChange={(rows) => setForm({ ...form, rows })} />
          {!hasRule(form.rows) && (
            <Text size="sm" c="orange.9">
              Without a pattern the group holds no client.
            </Text>
          )}
          {!readOnly && (
            <Group>
              <Button type="submit" loading={pending}>
                {isNew ? 'Create group' : 'Save changes'}
              </Button>
            </Group>
          )}
        </Stack>
      </form>
      <div>
        <GroupPreview params={params} />
      </div>
    </SimpleGrid>
  );
}

const bodyOf = (form: GroupForm) => ({ description: form.description, params: paramsOf(form.rows) });

/** A new client group, its rule checked against the live clients while it is written. */
export function NewClientGroupPage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: (form: GroupForm) =>
      apiRequest<{ data: ClientGroup }>('/client-groups', {
        method: 'POST',
        body: { id: form.id.trim(), ...bodyOf(form) },
      }).then((r) => r.data),
    onSuccess: async (group) => {
      queryClient.setQueryData(clientGroupQuery(group.id).queryKey, group);
      await queryClient.invalidateQueries({ queryKey: ['client-groups'] });
      await navigate({ to: '/client-groups/$groupId', params: { groupId: group.id } });
    },
  });
  return (
    <Stack>
      <AnchorLink to="/client-groups">← Client groups</AnchorLink>
      <Title order={1}>New client group</Title>
      {create.error && <ErrorAlert error={create.error} title="The group was not created" />}
      <GroupEditor
        initial={{ id: '', description: '', rows: [{ key: 'tag', mode: 'any', text: '' }] }}
        isNew
        pending={create.isPending}
        onSubmit={create.mutate}
      />
    </Stack>
  );
}

function Members({ group }: { group: ClientGroup }) {
  const members = useQuery({
    queryKey: ['client-group-members', group.id, group.client_ids],
    queryFn: () =>
      apiRequest<ClientList>('/clients', {
        query: new URLSearchParams({
          'filter[groups]': group.id,
          'fields[clients]': 'id,name,hostname,connection_state',
          'page[limit]': '500',
        }),
      }),
  });
  return (
    <Card withBorder padding="lg" component="section" aria-label="Members">
      <Title order={2} size="h4" mb="xs">
        Members ({group.num_clients}, {group.num_clients_connected} connected)
      </Title>
      {members.error && <ErrorAlert error={members.error} />}
      {members.isPending && <Loader size="sm" role="status" aria-label="Loading members" />}
      {members.data && members.data.data.length === 0 && (
        <Text c="dimmed">No client matches the saved rule. Change the rule and save it.</Text>
      )}
      {members.data && members.data.data.length > 0 && (
        <Table.ScrollContainer minWidth={340}>
          <Table data-testid="group-members">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Client</Table.Th>
                <Table.Th>Hostname</Table.Th>
                <Table.Th>State</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {members.data.data.map((client) => (
                <Table.Tr key={client.id}>
                  <Table.Td>
                    <AnchorLink to="/clients/$clientId" params={{ clientId: client.id ?? '' }}>
                      {client.name || client.id}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>{client.hostname}</Table.Td>
                  <Table.Td>
                    {client.connection_state && <StateBadge state={client.connection_state} />}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {members.data && members.data.meta.count > members.data.data.length && (
        <Text size="sm" c="dimmed">
          The first {members.data.data.length} are listed;{' '}
          <AnchorLink to="/clients" search={{ group: group.id }}>
            see all on the clients page
          </AnchorLink>
          .
        </Text>
      )}
    </Card>
  );
}

function DeleteGroup({ group }: { group: ClientGroup }) {
  const [open, setOpen] = useState(false);
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () =>
      apiRequest<void>(`/client-groups/${encodeURIComponent(group.id)}`, { method: 'DELETE' }),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['client-group', group.id] });
      await queryClient.invalidateQueries({ queryKey: ['client-groups'] });
      await navigate({ to: '/client-groups' });
    },
  });
  return (
    <>
      <Button color="red" variant="light" onClick={() => setOpen(true)}>
        Delete
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Delete group "${group.id}"?`}>
        <Stack>
          <Text>The clients stay; only the group and its rule go.</Text>
          {remove.error && <ErrorAlert error={remove.error} title="The group was not deleted" />}
          <Group justify="end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
              Delete group
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

/** One client group: its members, and its rule to edit with the live preview. */
export function ClientGroupPage() {
  const { groupId } = groupRoute.useParams();
  const queryClient = useQueryClient();
  const group = useQuery(clientGroupQuery(groupId));
  const mayEdit = useAllows('client-groups');
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: (form: GroupForm) =>
      apiRequest<{ data: ClientGroup }>(`/client-groups/${encodeURIComponent(groupId)}`, {
        method: 'PUT',
        body: bodyOf(form),
      }).then((r) => r.data),
    onMutate: () => setSaved(false),
    onSuccess: async (updated) => {
      queryClient.setQueryData(clientGroupQuery(groupId).queryKey, updated);
      await queryClient.invalidateQueries({ queryKey: ['client-groups'] });
      setSaved(true);
    },
  });
  const data = group.data;
  return (
    <Stack>
      <AnchorLink to="/client-groups">← Client groups</AnchorLink>
      <Group justify="space-between" align="end">
        <Title order={1}>Group {groupId}</Title>
        {data && mayEdit && <DeleteGroup group={data} />}
      </Group>
      {group.isPending && <Loader role="status" aria-label="Loading the group" />}
      {group.error && <ErrorAlert error={group.error} />}
      {data && <Members group={data} />}
      {saved && (
        <Alert color="green" title="Saved" withCloseButton onClose={() => setSaved(false)}>
          The group now holds the clients its new rule matches.
        </Alert>
      )}
      {save.error && <ErrorAlert error={save.error} title="The group was not saved" />}
      {data && (
        <GroupEditor
          key={data.id}
          initial={{ id: data.id, description: data.description, rows: rowsOf(data.params) }}
          isNew={false}
          pending={save.isPending}
          onSubmit={save.mutate}
          readOnly={!mayEdit}
        />
      )}
    </Stack>
  );
}
