import {
  Autocomplete,
  Button,
  Card,
  Checkbox,
  CopyButton,
  Group,
  NumberInput,
  SimpleGrid,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { apiRequest } from '../api/client.js';
import { clientTunnelsQuery, closeTunnel, type TunnelOverview } from '../api/fleet.js';
import type { Tunnel } from '../api/types.js';
import { ErrorAlert } from './error-alert.js';
import { TimeAgo } from './time-ago.js';

const SCHEMES = ['ssh', 'rdp', 'vnc', 'http', 'https'];

/** Where to reach a tunnel: its URL when it has a scheme, else host:port (this page's host for 0.0.0.0). */
export function tunnelAddress(tunnel: Pick<Tunnel, 'tunnel_url' | 'lhost' | 'lport'>): string {
  if (tunnel.tunnel_url) return tunnel.tunnel_url;
  const host =
    !tunnel.lhost || tunnel.lhost === '0.0.0.0' || tunnel.lhost === '::'
      ? window.location.hostname
      : tunnel.lhost;
  return `${host.includes(':') ? `[${host}]` : host}:${tunnel.lport}`;
}

/** "closes in 4 min" while the idle timer runs, "in use" while connections are open, or "never". */
export function IdleTimer({ tunnel }: { tunnel: TunnelOverview }) {
  if (tunnel.idle_timeout_minutes === 0) return <Text size="sm">never</Text>;
  if (tunnel.active_connections > 0) return <Text size="sm">in use ({tunnel.active_connections})</Text>;
  return tunnel.idle_close_at ? (
    <Text size="sm" component="span">
      closes <TimeAgo iso={tunnel.idle_close_at} />
    </Text>
  ) : (
    <Text size="sm">after {tunnel.idle_timeout_minutes} min idle</Text>
  );
}

function CreateTunnel({ clientId, created }: { clientId: string; created: (t: Tunnel) => void }) {
  const [remote, setRemote] = useState('');
  const [local, setLocal] = useState('');
  const [scheme, setScheme] = useState('');
  const [acl, setAcl] = useState('');
  const [idle, setIdle] = useState<string | number>(5);
  const [neverIdle, setNeverIdle] = useState(false);
  const [autoClose, setAutoClose] = useState('');
  const [checkPort, setCheckPort] = useState(true);
  const open = useMutation({
    mutationFn: () => {
      const query = new URLSearchParams({ remote: remote.trim() });
      if (local.trim()) query.set('local', local.trim());
      if (scheme.trim()) query.set('scheme', scheme.trim());
      if (acl.trim()) query.set('acl', acl.trim());
      if (neverIdle) query.set('skip-idle-timeout', 'true');
      else query.set('idle-timeout-minutes', String(idle));
      if (autoClose.trim()) query.set('auto-close', autoClose.trim());
      if (!checkPort) query.set('check_port', 'false');
      return apiRequest<{ data: Tunnel }>(`/clients/${encodeURIComponent(clientId)}/tunnels`, {
        method: 'PUT',
        query,
      }).then((r) => r.data);
    },
    onSuccess: (tunnel) => {
      setRemote('');
      created(tunnel);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    open.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="New tunnel">
      <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="sm">
        <TextInput
          label="Remote (on the client)"
          description="port, or host:port"
          placeholder="22 or 10.0.0.5:3389"
          value={remote}
          onChange={(e) => setRemote(e.currentTarget.value)}
          required
        />
        <TextInput
          label="Local (on the server)"
          description="port or host:port; empty = a free port"
          value={local}
          onChange={(e) => setLocal(e.currentTarget.value)}
        />
        <Autocomplete
          label="Scheme"
          description="for the tunnel URL"
          data={SCHEMES}
          value={scheme}
          onChange={setScheme}
          maxLength={15}
        />
        <TextInput
          label="ACL"
          description="addresses or CIDRs allowed; empty = anyone"
          placeholder="192.0.2.10, 10.0.0.0/8"
          value={acl}
          onChange={(e) => setAcl(e.currentTarget.value)}
        />
        <NumberInput
          label="Idle timeout (minutes)"
          min={0}
          value={idle}
          onChange={setIdle}
          disabled={neverIdle}
        />
        <TextInput
          label="Close after"
          description="e.g. 30m or 2h; empty = never"
          value={autoClose}
          onChange={(e) => setAutoClose(e.currentTarget.value)}
        />
        <Checkbox
          label="Never close for idleness"
          checked={neverIdle}
          onChange={(e) => setNeverIdle(e.currentTarget.checked)}
          mt="lg"
        />
        <Checkbox
          label="Check that the remote port answers first"
          checked={checkPort}
          onChange={(e) => setCheckPort(e.currentTarget.checked)}
          mt="lg"
        />
      </SimpleGrid>
      <Group mt="sm">
        <Button type="submit" loading={open.isPending} disabled={remote.trim() === ''}>
          Open tunnel
        </Button>
      </Group>
      {open.error && <ErrorAlert error={open.error} title="The tunnel could not be opened" />}
    </form>
  );
}

/** A client's tunnels: list with address to copy, owner and idle timer; open a new one; close one. */
export function ClientTunnels({ clientId, connected }: { clientId: string; connected: boolean }) {
  const queryClient = useQueryClient();
  const tunnels = useQuery(clientTunnelsQuery(clientId));
  const [outcome, setOutcome] = useState<string>();
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: ['tunnels'] }),
      queryClient.invalidateQueries({ queryKey: ['client', clientId] }),
    ]);
  const close = useMutation({
    mutationFn: (t: TunnelOverview) => closeTunnel(clientId, t.id, t.active_connections > 0).then(() => t),
    onSuccess: async (t) => {
      setOutcome(`Closed tunnel ${t.id} (${tunnelAddress(t)}).`);
      await refresh();
    },
  });
  const list = tunnels.data ?? [];
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Tunnels
      </Title>
      {tunnels.error && <ErrorAlert error={tunnels.error} />}
      {tunnels.isSuccess && list.length === 0 && (
        <Text size="sm" c="dimmed" mb="sm">
          {connected
            ? 'No tunnel is open to this client. Open one below to reach a port on it through this server.'
            : 'No tunnel: tunnels open while the client is connected.'}
        </Text>
      )}
      {list.length > 0 && (
        <Table.ScrollContainer minWidth={640}>
          <Table data-testid="client-tunnels">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Address</Table.Th>
                <Table.Th>Remote</Table.Th>
                <Table.Th>ACL</Table.Th>
                <Table.Th>Idle</Table.Th>
                <Table.Th>Opened by</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((tunnel) => {
                const address = tunnelAddress(tunnel);
                return (
                  <Table.Tr key={tunnel.id} data-testid="tunnel-row">
                    <Table.Td ff="monospace" data-testid="tunnel-address">
                      {address}
                    </Table.Td>
                    <Table.Td ff="monospace">
                      {tunnel.rhost}:{tunnel.rport}
                    </Table.Td>
                    <Table.Td>{tunnel.acl ?? 'anyone'}</Table.Td>
                    <Table.Td>
                      <IdleTimer tunnel={tunnel} />
                    </Table.Td>
                    <Table.Td>{tunnel.owner}</Table.Td>
                    <Table.Td>
                      <Group gap={6} wrap="nowrap">
                        <CopyButton value={address}>
                          {({ copied, copy }) => (
                            <Button size="compact-xs" variant="light" onClick={copy}>
                              {copied ? 'Copied' : tunnel.tunnel_url ? 'Copy URL' : 'Copy address'}
                            </Button>
                          )}
                        </CopyButton>
                        <Button
                          size="compact-xs"
                          variant="light"
                          color="red"
                          loading={close.isPending && close.variables.id === tunnel.id}
                          onClick={() => {
                            setOutcome(undefined);
                            close.mutate(tunnel);
                          }}
                          aria-label={`Close tunnel ${tunnel.id}`}
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
      {close.error && <ErrorAlert error={close.error} title="The tunnel could not be closed" />}
      {outcome && (
        <Text size="sm" c="teal.9" role="status">
          {outcome}
        </Text>
      )}
      {connected && (
        <>
          <Title order={3} size="h5" mt="md" mb="xs">
            Open a tunnel
          </Title>
          <CreateTunnel
            clientId={clientId}
            created={(t) => {
              setOutcome(`Opened tunnel ${t.id}: ${tunnelAddress(t)}.`);
              void refresh();
            }}
          />
        </>
      )}
    </Card>
  );
}
