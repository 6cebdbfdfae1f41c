import { Badge, Button, CopyButton, Group, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { closeTunnel, tunnelsQuery, type TunnelOverview } from '../api/fleet.js';
import { IdleTimer, tunnelAddress } from '../components/client-tunnels.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { ListHeading } from '../components/list-heading.js';

const matches = (tunnel: TunnelOverview, text: string): boolean =>
  [
    tunnel.client_id,
    tunnel.client_name,
    tunnel.owner,
    tunnel.rhost,
    tunnel.rport,
    tunnel.lport,
    tunnel.scheme ?? '',
  ]
    .join(' ')
    .toLowerCase()
    .includes(text.toLowerCase());

/** Every tunnel of the connected clients: who opened it, ACL, idle timer, auto-close; close any of them. */
export function TunnelsPage() {
  const queryClient = useQueryClient();
  const tunnels = useQuery(tunnelsQuery);
  const [text, setText] = useState('');
  const [outcome, setOutcome] = useState<string>();
  const close = useMutation({
    mutationFn: (t: TunnelOverview) => closeTunnel(t.client_id, t.id, t.active_connections > 0).then(() => t),
    onSuccess: async (t) => {
      setOutcome(`Closed tunnel ${t.id} of ${t.client_name || t.client_id}.`);
      await queryClient.invalidateQueries({ queryKey: ['tunnels'] });
    },
  });
  const all = tunnels.data?.data ?? [];
  const shown = text.trim() ? all.filter((t) => matches(t, text.trim())) : all;
  return (
    <Stack>
      <ListHeading
        title="Tunnels"
        fetching={tunnels.isFetching}
        count={`${tunnels.data?.meta.count ?? 0} open`}
        countTestId="tunnels-count"
      />
      <TextInput
        label="Filter"
        placeholder="client, owner, port…"
        type="search"
        value={text}
        onChange={(e) => setText(e.currentTarget.value)}
        w={{ base: '100%', xs: 300 }}
      />
      {tunnels.error && <ErrorAlert error={tunnels.error} />}
      {close.error && <ErrorAlert error={close.error} title="The tunnel could not be closed" />}
      {outcome && (
        <Text size="sm" c="teal.9" role="status">
          {outcome}
        </Text>
      )}
      {tunnels.isSuccess && all.length === 0 && (
        <Text c="dimmed" data-testid="tunnels-empty">
          No tunnel is open. Open one from a client&apos;s page (Clients → a connected client → Tunnels).
        </Text>
      )}
      {all.length > 0 && shown.length === 0 && <Text c="dimmed">No tunnel matches “{text}”.</Text>}
      {shown.length > 0 && (
        <Table.ScrollContainer minWidth={900}>
          <Table striped data-testid="tunnels-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Client</Table.Th>
                <Table.Th>Address</Table.Th>
                <Table.Th>Remote</Table.Th>
                <Table.Th>Opened by</Table.Th>
                <Table.Th>ACL</Table.Th>
                <Table.Th>Idle</Table.Th>
                <Table.Th>Auto-close</Table.Th>
                <Table.Th>Opened</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {shown.map((tunnel) => {
                const address = tunnelAddress(tunnel);
                return (
                  <Table.Tr key={`${tunnel.client_id}/${tunnel.id}`} data-testid="tunnel-row">
                    <Table.Td>
                      <AnchorLink to="/clients/$clientId" params={{ clientId: tunnel.client_id }}>
                        {tunnel.client_name || tunnel.client_id}
                      </AnchorLink>
                    </Table.Td>
                    <Table.Td ff="monospace">
                      {address}
                      {!tunnel.open && (
                        <Badge ml={6} size="sm" color="orange.9" variant="filled">
                          waiting
                        </Badge>
                      )}
                    </Table.Td>
                    <Table.Td ff="monospace">
                      {tunnel.rhost}:{tunnel.rport}
                    </Table.Td>
                    <Table.Td>{tunnel.owner}</Table.Td>
                    <Table.Td>{tunnel.acl ?? 'anyone'}</Table.Td>
                    <Table.Td>
                      <IdleTimer tunnel={tunnel} />
                    </Table.Td>
                    <Table.Td>{tunnel.close_at ? <TimeAgo iso={tunnel.close_at} /> : 'never'}</Table.Td>
                    <Table.Td>
                      <TimeAgo iso={tunnel.created_at} />
                    </Table.Td>
                    <Table.Td>
                      <Group gap={6} wrap="nowrap">
                        <CopyButton value={address}>
                          {({ copied, copy }) => (
                            <Button size="compact-xs" variant="light" onClick={copy}>
                              {copied ? 'Copied' : 'Copy'}
                            </Button>
                          )}
                        </CopyButton>
                        <Button
                          size="compact-xs"
                          variant="light"
                          color="red"
                          aria-label={`Close tunnel ${tunnel.id} of ${tunnel.client_name || tunnel.client_id}`}
                          loading={
                            close.isPending &&
                            close.variables.id === tunnel.id &&
                            close.variables.client_id === tunnel.client_id
                          }
                          onClick={() => {
                            setOutcome(undefined);
                            close.mutate(tunnel);
                          }}
                        >
                          Close
                        </Button>
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
