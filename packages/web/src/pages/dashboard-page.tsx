import {
  Badge,
  Button,
  Card,
  CopyButton,
  Group,
  SimpleGrid,
  Stack,
  Text,
  Title,
  Tooltip,
} from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { tunnelsQuery } from '../api/fleet.js';
import { statusQuery, vaultStatusQuery } from '../api/queries.js';
import { ErrorAlert } from '../components/error-alert.js';
import { RecentRuns } from '../components/recent-runs.js';
import { StatCard } from '../components/stat-card.js';
import { formatDuration } from '../lib/format.js';

function VaultCard() {
  const vault = useQuery(vaultStatusQuery);
  const state = !vault.data
    ? undefined
    : vault.data.init === 'uninitialized'
      ? { text: 'Not set up', color: 'gray.7' }
      : vault.data.status === 'unlocked'
        ? { text: 'Unlocked', color: 'teal.9' }
        : { text: 'Locked', color: 'red.9' };
  return (
    <StatCard
      label="Vault"
      loading={vault.isPending}
      value={
        vault.error ? (
          <Text c="dimmed">{vault.error instanceof Error ? vault.error.message : 'unavailable'}</Text>
        ) : (
          <Badge size="lg" color={state?.color} variant="filled" miw="max-content" data-testid="vault-state">
            {state?.text}
          </Badge>
        )
      }
    />
  );
}

export function DashboardPage() {
  const status = useQuery(statusQuery);
  const tunnels = useQuery(tunnelsQuery);
  const data = status.data;
  return (
    <Stack>
      <Title order={1} size="h2">
        Dashboard
      </Title>
      {status.error && <ErrorAlert error={status.error} />}
      <SimpleGrid cols={{ base: 2, md: 4 }}>
        <StatCard
          label="Connected clients"
          value={data?.clients_connected}
          color="teal.9"
          loading={status.isPending}
          clients={{ state: 'connected' }}
          testId="clients-connected"
        />
        <StatCard
          label="Disconnected clients"
          value={data?.clients_disconnected}
          color={data?.clients_disconnected ? 'orange.9' : undefined}
          loading={status.isPending}
          clients={{ state: 'disconnected' }}
          testId="clients-disconnected"
        />
        <StatCard
          label="Open tunnels"
          value={tunnels.error ? '—' : tunnels.data?.meta.count}
          loading={tunnels.isPending}
          to="/tunnels"
          testId="tunnels-open"
        />
        <VaultCard />
      </SimpleGrid>
      <Card withBorder padding="lg">
        <Title order={2} size="h4" mb="sm">
          Server
        </Title>
        {data && (
          <Stack gap="xs">
            <Group gap="xs">
              <Text c="dimmed" w={110}>
                Version
              </Text>
              <Text data-testid="server-version">{data.version}</Text>
            </Group>
            <Group gap="xs">
              <Text c="dimmed" w={110}>
                Up for
              </Text>
              <Text data-testid="server-uptime" title={`since ${new Date(data.started_at).toLocaleString()}`}>
                {formatDuration(data.uptime_sec * 1000)}
              </Text>
            </Group>
            <Group gap="xs" wrap="nowrap" align="start">
              <Text c="dimmed" w={110} style={{ flexShrink: 0 }}>
                Fingerprint
              </Text>
              <Text
                ff="monospace"
                size="sm"
                style={{ wordBreak: 'break-all' }}
                data-testid="server-fingerprint"
              >
                {data.fingerprint}
              </Text>
              <CopyButton value={data.fingerprint}>
                {({ copied, copy }) => (
                  <Tooltip label={copied ? 'Copied' : 'Copy the fingerprint'}>
                    <Button
                      size="compact-xs"
                      variant="light"
                      color={copied ? 'teal.9' : undefined}
                      onClick={copy}
                      style={{ flexShrink: 0 }}
                    >
                      {copied ? 'Copied' : 'Copy'}
                    </Button>
                  </Tooltip>
                )}
              </CopyButton>
            </Group>
            <Group gap="xs" align="start" wrap="nowrap">
              <Text c="dimmed" w={110} style={{ flexShrink: 0 }}>
                Agents connect to
              </Text>
              <Stack gap={2}>
                {data.connect_url.map((url) => (
                  <Text key={url} ff="monospace" size="sm">
                    {url}
                  </Text>
                ))}
              </Stack>
            </Group>
          </Stack>
        )}
      </Card>
      <RecentRuns />
    </Stack>
  );
}
