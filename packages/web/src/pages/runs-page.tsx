import { Group, Loader, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { RUNS_PAGE_SIZE, runListQuery, runQuery, type RunSummary } from '../api/runs.js';
import { ErrorAlert } from '../components/error-alert.js';
import { JobStateBadge } from '../components/job-state.js';
import { AnchorLink, ButtonLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { ListPager } from '../components/list-pager.js';
import { ListHeading } from '../components/list-heading.js';
import { describeTargets, describeWork } from '../lib/run-summary.js';
import { useAllowsAny } from '../session/use-rights.js';

const route = getRouteApi('/console/runs');

/** A run's state and counts, read per row (only the counts, never the children). */
function RunState({ jid }: { jid: string }) {
  const run = useQuery(runQuery(jid));
  if (!run.data) return <Loader size="xs" role="status" aria-label="Loading the state" />;
  const { counts } = run.data;
  return (
    <Group gap={6} wrap="nowrap">
      <JobStateBadge status={run.data.run.status} />
      <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
        {counts.successful} ok · {counts.failed} failed
        {counts.unknown ? ` · ${counts.unknown} unknown` : ''}
        {counts.running ? ` · ${counts.running} running` : ''}
      </Text>
    </Group>
  );
}

function RunRow({ run }: { run: RunSummary }) {
  return (
    <Table.Tr data-testid="run-row">
      <Table.Td>
        <TimeAgo iso={run.started_at} />
      </Table.Td>
      <Table.Td ff="monospace" style={{ wordBreak: 'break-word' }}>
        <AnchorLink to="/runs/$jid" params={{ jid: run.jid }}>
          {describeWork(run) || run.jid}
        </AnchorLink>
      </Table.Td>
      <Table.Td>{describeTargets(run)}</Table.Td>
      <Table.Td>
        <RunState jid={run.jid} />
      </Table.Td>
      <Table.Td>{run.created_by}</Table.Td>
    </Table.Tr>
  );
}

export function RunsPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const page = search.page ?? 1;
  const mayStart = useAllowsAny('commands', 'scripts');
  const list = useQuery({ ...runListQuery((page - 1) * RUNS_PAGE_SIZE), placeholderData: keepPreviousData });
  const count = list.data?.meta.count ?? 0;
  return (
    <Stack>
      <ListHeading
        title="Runs"
        fetching={list.isFetching}
        count={`${count} ${count === 1 ? 'run' : 'runs'}`}
        countTestId="runs-count"
      >
        {mayStart && <ButtonLink to="/runs/new">New run</ButtonLink>}
      </ListHeading>
      {list.error && <ErrorAlert error={list.error} />}
      {list.isSuccess && count === 0 && (
        <Stack align="center" p="xl" gap="xs" data-testid="runs-empty">
          <Text fw={600}>No command or script has run on many clients yet.</Text>
          <Text c="dimmed" size="sm">
            Choose “New run” to run a command or script on clients by id, group, tag or label, or select
            clients on the Clients page and run something on them.
          </Text>
        </Stack>
      )}
      {count > 0 && (
        <Table.ScrollContainer minWidth={720}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Started</Table.Th>
                <Table.Th>Command or script</Table.Th>
                <Table.Th>Targets</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>By</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.data.map((run) => (
                <RunRow key={run.jid} run={run} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <ListPager
        count={count}
        pageSize={RUNS_PAGE_SIZE}
        page={page}
        onPage={(next) => void navigate({ search: next > 1 ? { page: next } : {} })}
      />
    </Stack>
  );
}
