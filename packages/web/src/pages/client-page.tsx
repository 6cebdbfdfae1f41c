import { Badge, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { clientQuery } from '../api/queries.js';
import type { Client } from '../api/types.js';
import { StateBadge } from '../components/client-columns.js';
import { ClientTunnels } from '../components/client-tunnels.js';
import { CommandRunner } from '../components/command-runner.js';
import { ForgetClient } from '../components/forget-client.js';
import { ErrorAlert } from '../components/error-alert.js';
import { JobHistory } from '../components/job-history.js';
import { AnchorLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { formatBytes } from '../lib/format.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/clients/$clientId');

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" tt="uppercase" fw={700} c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div" style={{ wordBreak: 'break-word' }}>
        {children || '—'}
      </Text>
    </div>
  );
}

function Facts({ client }: { client: Client }) {
  const labels = Object.entries(client.labels);
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Facts
      </Title>
      <SimpleGrid cols={{ base: 1, xs: 2, md: 3 }} spacing="md">
        <Fact label="Operating system">{client.os_full_name || client.os}</Fact>
        <Fact label="Kernel / arch">{[client.os_kernel, client.os_arch].filter(Boolean).join(' / ')}</Fact>
        <Fact label="Hostname">{client.hostname}</Fact>
        <Fact label="CPU">
          {client.cpu_model_name} {client.num_cpus ? `(${client.num_cpus} cores)` : ''}
        </Fact>
        <Fact label="Memory">{client.mem_total ? formatBytes(client.mem_total) : ''}</Fact>
        <Fact label="Timezone">{client.timezone}</Fact>
        <Fact label="Addresses">{[...client.ipv4, ...client.ipv6].join(', ')}</Fact>
        <Fact label="Connected from">{client.address}</Fact>
        <Fact label={client.connection_state === 'connected' ? 'Connected since' : 'Disconnected since'}>
          <TimeAgo
            iso={client.connection_state === 'connected' ? client.connected_at : client.disconnected_at}
          />
        </Fact>
        <Fact label="Agent version">{client.version}</Fact>
        <Fact label="Credential">{client.client_auth_id}</Fact>
        <Fact label="Tags">
          <Group gap={4}>
            {client.tags.map((tag) => (
              <Badge key={tag} variant="outline" size="sm">
                {tag}
              </Badge>
            ))}
          </Group>
        </Fact>
        <Fact label="Labels">
          <Group gap={4}>
            {labels.map(([key, value]) => (
              <Badge key={key} variant="light" size="sm" tt="none">
                {key}: {value}
              </Badge>
            ))}
          </Group>
        </Fact>
      </SimpleGrid>
    </Card>
  );
}

export function ClientPage() {
  const { clientId } = route.useParams();
  const client = useQuery(clientQuery(clientId));
  const mayRunCommands = useAllows('commands');
  const mayTunnel = useAllows('tunnels');
  const mayForget = useAllows('clients');
  return (
    <Stack>
      <AnchorLink to="/clients" size="sm">
        ← Clients
      </AnchorLink>
      {client.error && <ErrorAlert error={client.error} />}
      {client.data && (
        <>
          <Group gap="sm" align="center">
            <Title order={1} size="h2">
              {client.data.name || client.data.id}
            </Title>
            <StateBadge state={client.data.connection_state} />
            <Text c="dimmed" ff="monospace" size="sm">
              {client.data.id}
            </Text>
          </Group>
          <Facts client={client.data} />
          {mayRunCommands && (
            <CommandRunner
              clientId={client.data.id}
              connected={client.data.connection_state === 'connected'}
            />
          )}
          {mayTunnel && (
            <ClientTunnels
              clientId={client.data.id}
              connected={client.data.connection_state === 'connected'}
            />
          )}
          {mayForget && client.data.connection_state === 'disconnected' && (
            <ForgetClient clientId={client.data.id} />
          )}
          {mayRunCommands && <JobHistory clientId={client.data.id} />}
        </>
      )}
    </Stack>
  );
}
