import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  Loader,
  SegmentedControl,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useMemo, useRef, useState, type ReactNode } from 'react';
import {
  fetchRunChildren,
  fetchRunCsv,
  rerunRun,
  runQuery,
  type RolloutProgress,
  type Run,
  type RunCounts,
} from '../api/runs.js';
import { ErrorAlert } from '../components/error-alert.js';
import { JobOutputModal } from '../components/job-output-modal.js';
import { Chip } from '../components/chip.js';
import { JOB_STATE_COLORS, JobStateBadge } from '../components/job-state.js';
import { AnchorLink } from '../components/links.js';
import { ClientRowLink } from '../components/row-link.js';
import { TimeAgo } from '../components/time-ago.js';
import { saveText } from '../lib/download.js';
import { formatDuration } from '../lib/format.js';
import { mergeLive } from '../lib/run-follow.js';
import { runProgress } from '../lib/run-progress.js';
import { useRunFollow } from '../lib/use-run-follow.js';
import {
  countStates,
  filterByState,
  jobDurationMs,
  outputPreview,
  parseStateFilter,
  RUN_STATES,
  type ChildJob,
} from '../lib/run-jobs.js';
import { describeTargets } from '../lib/run-summary.js';

const route = getRouteApi('/console/runs/$jid');
const ROW_HEIGHT = 44;
const COLUMNS = 5;

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" tt="uppercase" fw={700} c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div" style={{ wordBreak: 'break-word' }}>
        {children}
      </Text>
    </div>
  );
}

/** A staged run's progress: batches done, when the next starts, or why it stopped. */
function RolloutText({ rollout }: { rollout: RolloutProgress }) {
  return (
    <span data-testid="run-rollout">
      {rollout.batches_done} of {rollout.batches_total} done ({rollout.batch_size} per batch
      {rollout.max_failures === null ? '' : `, stops at ${rollout.max_failures} failures`}; {rollout.failures}{' '}
      so far)
      {rollout.next_batch_at && (
        <>
          , next <TimeAgo iso={rollout.next_batch_at} />
        </>
      )}
      {rollout.stopped && <Text c="red.9" size="sm">{`Stopped: ${rollout.stopped}`}</Text>}
    </span>
  );
}

function RunFacts({ run }: { run: Run }) {
  return (
    <Card withBorder padding="lg">
      <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="md">
        <Fact label="Started">
          <TimeAgo iso={run.started_at} /> by {run.created_by}
        </Fact>
        <Fact label="Finished">{run.finished_at ? <TimeAgo iso={run.finished_at} /> : 'still running'}</Fact>
        <Fact label="Targets">{describeTargets(run)}</Fact>
        <Fact label="Options">
          {run.concurrent ? 'concurrent' : `sequential${run.abort_on_err ? ', stops at a failure' : ''}`},
          timeout {run.timeout_sec} s{run.interpreter ? `, ${run.interpreter}` : ''}
          {run.cwd ? `, in ${run.cwd}` : ''}
        </Fact>
        {run.rollout && (
          <Fact label="Batches">
            <RolloutText rollout={run.rollout} />
          </Fact>
        )}
      </SimpleGrid>
      <Text size="xs" tt="uppercase" fw={700} c="dimmed" mt="md">
        {run.is_script ? 'Script' : 'Command'}
      </Text>
      <Code block className="console-output" data-testid="run-command">
        {run.command}
      </Code>
    </Card>
  );
}

/**
 * One job's row, memoised: scrolling re-renders the list on every frame, and only rows entering the window should
 * render then. A finished job's duration and preview never change; a running one's duration moves with `now`.
 * Plain markup (console.css's `.virtual-rows`, a chip, a plain link), since a frame mounts several rows at once.
 */
const JobRow = memo(function JobRow({
  job,
  durationMs,
  striped,
  onOpen,
}: {
  job: ChildJob;
  durationMs: number | undefined;
  striped: boolean;
  onOpen: (job: ChildJob) => void;
}) {
  const preview = outputPreview(job);
  const name = job.client_name || job.client_id;
  return (
    <tr
      data-testid="run-job"
      data-client={job.client_id}
      data-striped={striped || undefined}
      style={{ height: ROW_HEIGHT }}
    >
      <td className="clip">
        <ClientRowLink clientId={job.client_id}>{name}</ClientRowLink>
      </td>
      <td>
        <Chip color={JOB_STATE_COLORS[job.status] ?? 'gray.8'} testId="job-state">
          {job.status}
        </Chip>
      </td>
      <td data-testid="run-job-exit">{job.exit_code ?? '—'}</td>
      <td>{durationMs === undefined ? '—' : formatDuration(durationMs)}</td>
      <td className="clip" style={{ maxWidth: 420 }}>
        <button
          type="button"
          className="preview-button"
          onClick={() => onOpen(job)}
          aria-label={`${preview || '(no output)'}: full output of ${name}`}
          data-testid="run-job-preview"
        >
          {preview || <span className="dimmed">(no output)</span>}
        </button>
      </td>
    </tr>
  );
});

/** The rows, virtualised: only those in view are in the page, so a run on thousands of clients stays fast. */
function JobRows({ jobs, onOpen }: { jobs: ChildJob[]; onOpen: (job: ChildJob) => void }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: jobs.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const padTop = items[0]?.start ?? 0;
  const padBottom = items.length > 0 ? virtualizer.getTotalSize() - (items[items.length - 1]?.end ?? 0) : 0;
  const now = Date.now();
  return (
    <div className="clients-scroll" ref={scrollRef} tabIndex={0} aria-label="Jobs of this run">
      <Table className="clients-table" verticalSpacing="xs" miw={720}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Client</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Exit code</Table.Th>
            <Table.Th>Duration</Table.Th>
            <Table.Th>Output</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <tbody className="virtual-rows">
          {padTop > 0 && (
            <tr aria-hidden="true">
              <td style={{ height: padTop, padding: 0, border: 0 }} colSpan={COLUMNS} />
            </tr>
          )}
          {items.map((item) => {
            const job = jobs[item.index];
            if (!job) return null;
            return (
              <JobRow
                key={job.jid}
                job={job}
                durationMs={jobDurationMs(job, now)}
                striped={item.index % 2 === 0}
                onOpen={onOpen}
              />
            );
          })}
          {padBottom > 0 && (
            <tr aria-hidden="true">
              <td style={{ height: padBottom, padding: 0, border: 0 }} colSpan={COLUMNS} />
            </tr>
          )}
        </tbody>
      </Table>
    </div>
  );
}

function Actions({ jid, counts }: { jid: string; counts: RunCounts }) {
  const navigate = useNavigate();
  const rerun = useMutation({
    mutationFn: (only: 'failed' | 'all') => rerunRun(jid, only),
    onSuccess: (next) => void navigate({ to: '/runs/$jid', params: { jid: next }, search: {} }),
  });
  const csv = useMutation({
    mutationFn: () => fetchRunCsv(jid),
    onSuccess: ({ name, text }) => saveText(name, text, 'text/csv'),
  });
  const failed = counts.failed + counts.unknown + (counts.skipped ?? 0);
  return (
    <Stack gap="xs">
      <Group gap="xs">
        <Button variant="light" onClick={() => csv.mutate()} loading={csv.isPending}>
          Export CSV
        </Button>
        <Button
          color="red"
          variant="light"
          disabled={failed === 0}
          loading={rerun.isPending && rerun.variables === 'failed'}
          onClick={() => rerun.mutate('failed')}
        >
          Run again on the failed ones{failed ? ` (${failed})` : ''}
        </Button>
        <Button
          variant="subtle"
          loading={rerun.isPending && rerun.variables === 'all'}
          onClick={() => rerun.mutate('all')}
        >
          Run again on all
        </Button>
        {csv.isSuccess && (
          <Text size="sm" c="dimmed" role="status">
            Saved {csv.data.name}
          </Text>
        )}
      </Group>
      {csv.error && <ErrorAlert error={csv.error} title="The export failed" />}
      {rerun.error && <ErrorAlert error={rerun.error} title="The run did not start again" />}
    </Stack>
  );
}

export function RunPage() {
  const { jid } = route.useParams();
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const [open, setOpen] = useState<ChildJob>();
  const queryClient = useQueryClient();
  const options = runQuery(jid);
  // Live: a running run is followed over /ws/commands/{jid} (output and results as they happen); when the
  // socket ends the run is read again, and when it cannot follow the page polls instead. (The run as last read;
  // useQuery below renders again whenever it changes.)
  const running = queryClient.getQueryData(options.queryKey)?.run.status === 'running';
  const follow = useRunFollow(
    jid,
    running,
    () => void queryClient.invalidateQueries({ queryKey: ['run', jid] }),
  );
  const live = follow.state === 'live';
  const run = useQuery({
    ...options,
    // While the socket follows the run nothing is polled; without it the run is read each second.
    refetchInterval: (query) => (!live && query.state.data?.run.status === 'running' ? 1000 : false),
  });
  // Polling: the run's counts are read each second (one cheap query); the children are read again only when
  // the counts moved, and every change of a second lands in one render, whatever the number of clients.
  const signature = run.data ? `${run.data.run.status}:${JSON.stringify(run.data.counts)}` : '';
  const children = useQuery({
    queryKey: ['run-children', jid, signature],
    queryFn: () => fetchRunChildren(jid),
    enabled: signature !== '',
    placeholderData: keepPreviousData,
    // Each signature is read once; the earlier reads are dropped at once rather than cached.
    gcTime: 0,
    // A running child's output is stored when it ends; until then only its row's duration moves.
    refetchInterval: running && !live ? 5000 : false,
  });

  const all = useMemo(() => mergeLive(children.data ?? [], follow.live), [children.data, follow.live]);
  const state = search.state ?? 'all';
  const jobs = useMemo(() => filterByState(all, state), [all, state]);
  const counts = run.data && (follow.live.size > 0 && running ? countStates(all) : run.data.counts);
  const skipped = counts && 'skipped' in counts ? ((counts as { skipped?: number }).skipped ?? 0) : 0;
  const total = counts ? RUN_STATES.reduce((sum, s) => sum + counts[s], 0) + skipped : 0;
  const openJob = open && (all.find((j) => j.jid === open.jid) ?? open);
  // Over only when svcd says so: the rows cannot tell (clients not reached yet have none, only rows in view render).
  const status = run.data?.run.status;
  const progress = useMemo(
    () => (status === undefined ? undefined : runProgress(status, all)),
    [status, all],
  );

  return (
    <Stack>
      <AnchorLink to="/runs" size="sm">
        ← Runs
      </AnchorLink>
      <Group gap="sm" align="center">
        <Title order={1} size="h2">
          Run
        </Title>
        {run.data && <JobStateBadge status={run.data.run.status} />}
        {live && (
          <Badge
            color="teal"
            variant="dot"
            data-testid="run-live"
            title="Output and results arrive as they happen"
          >
            live
          </Badge>
        )}
        {(run.isFetching || children.isFetching) && <Loader size="xs" role="status" aria-label="Updating" />}
        <Text c="dimmed" ff="monospace" size="sm">
          {jid}
        </Text>
      </Group>
      {run.error && <ErrorAlert error={run.error} />}
      {run.data && counts && (
        <>
          <RunFacts run={run.data.run} />
          <Actions jid={jid} counts={counts} />
          {progress && (
            <Text size="sm" c="dimmed" data-testid="run-progress" data-done={progress.done}>
              {progress.text}
            </Text>
          )}
          <SegmentedControl
            aria-label="Show jobs in state"
            value={state}
            onChange={(value) => {
              const next = parseStateFilter(value);
              void navigate({ search: next === 'all' ? {} : { state: next }, replace: true });
            }}
            data={[
              { value: 'all', label: `All (${total})` },
              ...RUN_STATES.map((s) => ({ value: s, label: `${s} (${counts[s]})` })),
            ]}
            data-testid="state-filter"
          />
          {children.error && <ErrorAlert error={children.error} />}
          {children.data && jobs.length === 0 && (
            <Text c="dimmed" size="sm" data-testid="run-jobs-empty">
              {total === 0
                ? 'No client has a job yet; they appear here as the run reaches them.'
                : `No job is ${state}.`}
            </Text>
          )}
          {jobs.length > 0 && <JobRows jobs={jobs} onOpen={setOpen} />}
        </>
      )}
      <JobOutputModal job={openJob} onClose={() => setOpen(undefined)} />
    </Stack>
  );
}
