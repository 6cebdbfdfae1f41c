import { Group, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { SCHEDULES_PAGE_SIZE, scheduleListQuery, type Schedule } from '../api/schedules.js';
import { ErrorAlert } from '../components/error-alert.js';
import { FiringOutcomeBadge } from '../components/firing-outcome.js';
import { AnchorLink, ButtonLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { ListPager } from '../components/list-pager.js';
import { ListHeading } from '../components/list-heading.js';
import { formatExact } from '../lib/format.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/schedules');

function LastExecution({ schedule }: { schedule: Schedule }) {
  const last = schedule.last_execution;
  if (!last)
    return (
      <Text size="sm" c="dimmed">
        not fired yet
      </Text>
    );
  return (
    <Group gap={6} wrap="nowrap">
      <FiringOutcomeBadge outcome={last.outcome} />
      <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
        <TimeAgo iso={last.started_at} />
        {last.outcome === 'started' ? ` · ${last.success_count}/${last.client_count} ok` : ''}
      </Text>
    </Group>
  );
}

function ScheduleRow({ schedule }: { schedule: Schedule }) {
  return (
    <Table.Tr data-testid="schedule-row" data-id={schedule.id}>
      <Table.Td>
        <AnchorLink to="/schedules/$id" params={{ id: schedule.id }}>
          {schedule.name}
        </AnchorLink>
      </Table.Td>
      <Table.Td ff="monospace">
        {schedule.schedule}
        <Text size="xs" c="dimmed" ff="inherit">
          {schedule.timezone}
        </Text>
      </Table.Td>
      <Table.Td data-testid="schedule-next">
        {schedule.next_run_at ? (
          <span title={formatExact(schedule.next_run_at)}>{formatExact(schedule.next_run_at)}</span>
        ) : (
          'never again'
        )}
      </Table.Td>
      <Table.Td>
        <LastExecution schedule={schedule} />
      </Table.Td>
      <Table.Td>{schedule.created_by}</Table.Td>
    </Table.Tr>
  );
}

export function SchedulesPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const page = search.page ?? 1;
  const mayEdit = useAllows('scheduler');
  const list = useQuery({
    ...scheduleListQuery((page - 1) * SCHEDULES_PAGE_SIZE),
    placeholderData: keepPreviousData,
  });
  const count = list.data?.meta.count ?? 0;
  return (
    <Stack>
      <ListHeading
        title="Schedules"
        fetching={list.isFetching}
        count={`${count} ${count === 1 ? 'schedule' : 'schedules'}`}
        countTestId="schedules-count"
      >
        {mayEdit && <ButtonLink to="/schedules/new">New schedule</ButtonLink>}
      </ListHeading>
      {list.error && <ErrorAlert error={list.error} />}
      {list.isSuccess && count === 0 && (
        <Stack align="center" p="xl" gap="xs" data-testid="schedules-empty">
          <Text fw={600}>Nothing runs on a schedule yet.</Text>
          <Text c="dimmed" size="sm">
            Choose “New schedule” to run a command or script on clients by a cron expression, e.g. every night
            at 03:00 in your time zone.
          </Text>
        </Stack>
      )}
      {count > 0 && (
        <Table.ScrollContainer minWidth={720}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Cron</Table.Th>
                <Table.Th>Next run (your time)</Table.Th>
                <Table.Th>Last firing</Table.Th>
                <Table.Th>By</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.data.map((s) => (
                <ScheduleRow key={s.id} schedule={s} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <ListPager
        count={count}
        pageSize={SCHEDULES_PAGE_SIZE}
        page={page}
        onPage={(next) => void navigate({ search: next > 1 ? { page: next } : {} })}
      />
    </Stack>
  );
}
