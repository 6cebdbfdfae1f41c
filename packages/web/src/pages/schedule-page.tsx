import { Button, Card, Group, Loader, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useState, type ReactNode } from 'react';
import {
  deleteSchedule,
  replaceSchedule,
  scheduleHistoryQuery,
  scheduleQuery,
  type Schedule,
  type ScheduleFiring,
} from '../api/schedules.js';
import { ConfirmModal } from '../components/confirm-modal.js';
import { ErrorAlert } from '../components/error-alert.js';
import { FiringOutcomeBadge } from '../components/firing-outcome.js';
import { JobStateBadge } from '../components/job-state.js';
import { AnchorLink } from '../components/links.js';
import { ScheduleFormCard } from '../components/schedule-form.js';
import { TimeAgo } from '../components/time-ago.js';
import { formatExact } from '../lib/format.js';
import { describeTargets } from '../lib/run-summary.js';
import { browserTimeZone, formOfSchedule } from '../lib/schedule-form.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/schedules/$id');

function Field({ label, children, testId }: { label: string; children: ReactNode; testId?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text component="div" size="sm" data-testid={testId} style={{ wordBreak: 'break-word' }}>
        {children}
      </Text>
    </div>
  );
}

function what(s: Schedule): string {
  if (s.type === 'command') return s.command;
  return s.script_id ? `library script ${s.script_id}` : 'a script';
}

function Summary({ schedule: s }: { schedule: Schedule }) {
  const zone = browserTimeZone();
  return (
    <Card withBorder padding="lg">
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Field label="Cron" testId="schedule-cron">
          <Text ff="monospace" size="sm" span>
            {s.schedule}
          </Text>{' '}
          in {s.timezone}
        </Field>
        <Field label="Next run" testId="schedule-next-run">
          {s.next_run_at ? (
            <>
              {formatExact(s.next_run_at)} (<TimeAgo iso={s.next_run_at} />)
              {s.timezone !== zone && (
                <Text size="xs" c="dimmed">
                  {formatExact(s.next_run_at, s.timezone)} in the schedule's zone
                </Text>
              )}
            </>
          ) : (
            'never again'
          )}
        </Field>
        <Field label="Runs">
          <Text ff="monospace" size="sm" span>
            {what(s)}
          </Text>
        </Field>
        <Field label="On" testId="schedule-targets">
          {describeTargets(s)}
        </Field>
        <Field label="Options">
          {[
            s.execute_concurrently ? 'concurrent' : 'one client after another',
            s.abort_on_error && !s.execute_concurrently ? 'stops at the first failure' : '',
            s.overlaps ? 'may overlap its previous run' : 'skipped while its previous run runs',
            s.timeout_sec !== null ? `timeout ${s.timeout_sec} s` : '',
            s.is_sudo ? 'sudo' : '',
          ]
            .filter(Boolean)
            .join(' · ')}
        </Field>
        <Field label="Changed">
          <TimeAgo iso={s.updated_at} /> by {s.updated_by}
        </Field>
      </SimpleGrid>
    </Card>
  );
}

function FiringRow({ firing: f }: { firing: ScheduleFiring }) {
  return (
    <Table.Tr data-testid="firing-row">
      <Table.Td>
        <span title={formatExact(f.scheduled_at)}>{formatExact(f.scheduled_at)}</span>
      </Table.Td>
      <Table.Td>
        <FiringOutcomeBadge outcome={f.outcome} />
        {f.reason && (
          <Text size="xs" c="dimmed" data-testid="firing-reason">
            {f.reason}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        {f.jid ? (
          <Group gap={6} wrap="nowrap">
            {f.status && <JobStateBadge status={f.status} />}
            <AnchorLink to="/runs/$jid" params={{ jid: f.jid }} size="sm">
              {f.jobs ? `${f.jobs.successful}/${f.client_count ?? 0} ok` : 'the run'}
            </AnchorLink>
          </Group>
        ) : (
          '—'
        )}
      </Table.Td>
    </Table.Tr>
  );
}

function History({ id }: { id: string }) {
  const history = useQuery(scheduleHistoryQuery(id));
  if (history.error) return <ErrorAlert error={history.error} title="Cannot read the firings" />;
  if (!history.data) return <Loader size="sm" role="status" aria-label="Loading the firings" />;
  const { data, meta } = history.data;
  return (
    <Card withBorder padding="lg">
      <Group justify="space-between" mb="sm">
        <Title order={2} size="h4">
          Firings
        </Title>
        <Text size="xs" c="dimmed" data-testid="firing-counts">
          {meta.outcomes.started} started · {meta.outcomes.skipped} skipped · {meta.outcomes.missed} missed ·{' '}
          {meta.outcomes.failed} failed
        </Text>
      </Group>
      {data.length === 0 ? (
        <Text size="sm" c="dimmed" data-testid="firings-empty">
          It has not fired yet. Each firing appears here with its run; the next one is shown above.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={480}>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Scheduled for</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Run</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.map((f) => (
                <FiringRow key={`${f.scheduled_at}-${f.fired_at}`} firing={f} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Card>
  );
}

export function SchedulePage() {
  const { id } = route.useParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const schedule = useQuery(scheduleQuery(id));
  const mayEdit = useAllows('scheduler');
  const [editing, setEditing] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const s = schedule.data;
  return (
    <Stack>
      <AnchorLink to="/schedules" size="sm">
        ← Schedules
      </AnchorLink>
      <Group justify="space-between" align="center">
        <Title order={1} size="h2">
          {s ? s.name : 'Schedule'}
        </Title>
        {s && !editing && mayEdit && (
          <Group gap="xs">
            <Button variant="default" onClick={() => setEditing(true)}>
              Edit
            </Button>
            <Button color="red" variant="light" onClick={() => setConfirmDelete(true)}>
              Delete
            </Button>
          </Group>
        )}
      </Group>
      {schedule.error && <ErrorAlert error={schedule.error} />}
      {!s && !schedule.error && <Loader size="sm" role="status" aria-label="Loading" />}
      {s && editing && (
        <ScheduleFormCard
          initial={formOfSchedule(s)}
          submitLabel="Save the schedule"
          save={(body) => replaceSchedule(id, body)}
          onSaved={(saved) => {
            queryClient.setQueryData(scheduleQuery(id).queryKey, saved);
            void queryClient.invalidateQueries({ queryKey: ['schedules'] });
            setEditing(false);
          }}
          onCancel={() => setEditing(false)}
        />
      )}
      {s && !editing && <Summary schedule={s} />}
      {s && <History id={id} />}
      <ConfirmModal
        opened={confirmDelete}
        title="Delete this schedule?"
        confirmLabel="Delete the schedule"
        onClose={() => setConfirmDelete(false)}
        onConfirm={async () => {
          await deleteSchedule(id);
          queryClient.removeQueries({ queryKey: ['schedule', id] });
          await queryClient.invalidateQueries({ queryKey: ['schedules'] });
          void navigate({ to: '/schedules' });
        }}
      >
        “{s?.name}” stops firing and its firing history is removed. The runs it started stay in Runs.
      </ConfirmModal>
    </Stack>
  );
}
