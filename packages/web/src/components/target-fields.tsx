import { Badge, Group, SegmentedControl, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { clientCount } from '../api/runs.js';
import { targetCountQuery, type Targets } from '../lib/run-compose.js';
import { ErrorAlert } from './error-alert.js';

/** How many clients the targeting matches now (GET /clients' count), recounted 250 ms after the last change. */
function TargetCount({ targets }: { targets: Targets }) {
  const [debounced] = useDebouncedValue(targets, 250);
  const query = targetCountQuery(debounced);
  const count = useQuery({
    queryKey: ['run-target-count', query?.toString()],
    queryFn: () => clientCount(query ?? new URLSearchParams()),
    enabled: query !== undefined,
  });
  if (!query)
    return (
      <Text size="sm" c="dimmed">
        Choose the targets to see how many clients match.
      </Text>
    );
  if (count.error) return <ErrorAlert error={count.error} title="Cannot count the matching clients" />;
  return (
    <Group gap="xs" aria-live="polite">
      <Badge size="lg" variant="light" data-testid="target-count">
        {count.data === undefined ? '…' : `${count.data} ${count.data === 1 ? 'client' : 'clients'}`}
      </Badge>
      <Text size="sm" c="dimmed">
        match now{count.isFetching ? ' (counting…)' : ''}; disconnected ones get a failed job.
      </Text>
    </Group>
  );
}

/** The targets of a run or a schedule: ids and groups, tags or labels, with the count they match. */
export function TargetFields({ targets, set }: { targets: Targets; set: (next: Partial<Targets>) => void }) {
  return (
    <Stack gap="sm">
      <SegmentedControl
        aria-label="Target clients by"
        value={targets.kind}
        onChange={(kind) => set({ kind: kind })}
        data={[
          { value: 'ids', label: 'Ids / groups' },
          { value: 'tags', label: 'Tags' },
          { value: 'labels', label: 'Labels' },
        ]}
      />
      {targets.kind === 'ids' && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Client ids"
            description="Comma-separated"
            value={targets.clientIds}
            onChange={(e) => set({ clientIds: e.currentTarget.value })}
          />
          <TextInput
            label="Client group ids"
            description="Comma-separated; their members join the client ids"
            value={targets.groupIds}
            onChange={(e) => set({ groupIds: e.currentTarget.value })}
          />
        </SimpleGrid>
      )}
      {targets.kind !== 'ids' && (
        <Group align="end" wrap="wrap">
          {targets.kind === 'tags' ? (
            <TextInput
              label="Tags"
              description="Comma-separated"
              value={targets.tags}
              onChange={(e) => set({ tags: e.currentTarget.value })}
              miw={240}
            />
          ) : (
            <TextInput
              label="Labels"
              description="Comma-separated key:value"
              value={targets.labels}
              onChange={(e) => set({ labels: e.currentTarget.value })}
              miw={240}
            />
          )}
          <SegmentedControl
            aria-label="Match"
            value={targets.operator}
            onChange={(operator) => set({ operator: operator })}
            data={[
              { value: 'OR', label: 'any (OR)' },
              { value: 'AND', label: 'all (AND)' },
            ]}
          />
        </Group>
      )}
      <TargetCount targets={targets} />
    </Stack>
  );
}
