import { Badge, Card, Group, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { recentRunsQuery, type RecentRun } from '../api/fleet.js';
import { ErrorAlert } from './error-alert.js';
import { PathLink } from './path-link.js';
import { TimeAgo } from './time-ago.js';

const COLORS: Record<string, string> = {
  failed: 'red.9',
  unknown: 'orange.9',
  running: 'blue.9',
  successful: 'teal.9',
};

const targetOf = (run: RecentRun): string => {
  const parts = [
    run.client_ids?.length ? `${run.client_ids.length} client${run.client_ids.length === 1 ? '' : 's'}` : '',
    run.group_ids?.length ? `groups ${run.group_ids.join(', ')}` : '',
    run.tags ? `tags ${run.tags.tags.join(` ${run.tags.operator} `)}` : '',
    run.labels ? `labels ${run.labels.labels.join(` ${run.labels.operator} `)}` : '',
  ];
  return parts.filter(Boolean).join(', ');
};

/** The last runs on many clients, failed ones first, each linking to its page. */
export function RecentRuns() {
  const runs = useQuery(recentRunsQuery);
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Recent runs
      </Title>
      {runs.error && <ErrorAlert error={runs.error} />}
      {runs.isSuccess && runs.data.length === 0 && (
        <Text size="sm" c="dimmed">
          No command or script has run on several clients yet. Select clients on the Clients page and choose
          “Run a command or script”.
        </Text>
      )}
      <Stack gap="xs" data-testid="recent-runs">
        {runs.data?.map((run) => (
          <Group key={run.jid} gap="sm" wrap="nowrap" align="center">
            <Badge color={COLORS[run.status ?? ''] ?? 'gray.7'} variant="filled" miw="max-content">
              {run.status ?? '?'}
            </Badge>
            <PathLink href={`/runs/${encodeURIComponent(run.jid)}`} ff="monospace" size="sm" lineClamp={1}>
              {run.is_script ? 'script' : run.command}
            </PathLink>
            <Text size="sm" c="dimmed" visibleFrom="sm" lineClamp={1}>
              {targetOf(run)} · {run.created_by}
            </Text>
            <Text size="sm" c="dimmed" ml="auto" miw="max-content">
              <TimeAgo iso={run.started_at} />
            </Text>
          </Group>
        ))}
      </Stack>
    </Card>
  );
}
