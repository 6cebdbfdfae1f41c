import { Group, Loader, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { clientGroupsQuery } from '../api/group-queries.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink, ButtonLink } from '../components/links.js';
import { describeRule } from '../lib/group-rules.js';
import { useAllows } from '../session/use-rights.js';

/** Every client group with its rule and member counts. */
export function ClientGroupsPage() {
  const [text, setText] = useState('');
  const mayEdit = useAllows('client-groups');
  const [q] = useDebouncedValue(text.trim(), 250);
  const groups = useQuery({ ...clientGroupsQuery(q), placeholderData: keepPreviousData });
  const rows = groups.data?.data ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="end">
        <Title order={1}>Client groups</Title>
        {mayEdit && <ButtonLink to="/client-groups/new">New group</ButtonLink>}
      </Group>
      <Group align="end">
        <TextInput label="Search by id" value={text} onChange={(e) => setText(e.currentTarget.value)} />
        {groups.isFetching && <Loader size="xs" role="status" aria-label="Loading groups" />}
      </Group>
      {groups.error && <ErrorAlert error={groups.error} />}
      {groups.data && (
        <Text size="sm" c="dimmed" aria-live="polite">
          {groups.data.meta.count} {groups.data.meta.count === 1 ? 'group' : 'groups'}
        </Text>
      )}
      {groups.data && rows.length === 0 ? (
        <Text>
          {q
            ? 'No group matches. Change the search.'
            : 'No client group yet. Create one with "New group": a rule on names, tags, labels… picks its clients.'}
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={640}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Group</Table.Th>
                <Table.Th>Description</Table.Th>
                <Table.Th>Rule</Table.Th>
                <Table.Th>Clients</Table.Th>
                <Table.Th>Connected</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((group) => (
                <Table.Tr key={group.id}>
                  <Table.Td>
                    <AnchorLink to="/client-groups/$groupId" params={{ groupId: group.id }}>
                      {group.id}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>{group.description}</Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {describeRule(group.params)}
                    </Text>
                  </Table.Td>
                  <Table.Td>{group.num_clients}</Table.Td>
                  <Table.Td>{group.num_clients_connected}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
