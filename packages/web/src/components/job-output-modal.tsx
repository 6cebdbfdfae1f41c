import { Code, Group, Modal, Stack, Text } from '@mantine/core';
import { formatDuration } from '../lib/format.js';
import { jobDurationMs, type ChildJob } from '../lib/run-jobs.js';
import { JobStateBadge } from './job-state.js';
import { TimeAgo } from './time-ago.js';

/** The full output of one job, in a modal. */
export function JobOutputModal({ job, onClose }: { job: ChildJob | undefined; onClose: () => void }) {
  const duration = job ? jobDurationMs(job, Date.now()) : undefined;
  return (
    <Modal
      opened={job !== undefined}
      onClose={onClose}
      size="xl"
      title={job ? `Output of ${job.client_name || job.client_id}` : 'Output'}
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      {job && (
        <Stack gap="sm" data-testid="job-output">
          <Group gap="sm">
            <JobStateBadge status={job.status} />
            <Text size="sm">exit code {job.exit_code ?? '—'}</Text>
            {duration !== undefined && <Text size="sm">took {formatDuration(duration)}</Text>}
            <Text size="sm">
              started <TimeAgo iso={job.started_at} />
            </Text>
          </Group>
          <Text size="xs" c="dimmed" ff="monospace">
            job {job.jid} on {job.client_id}
          </Text>
          {job.error && (
            <Text c="red" size="sm">
              {job.error}
            </Text>
          )}
          <Text fw={700} size="sm">
            stdout{job.result.stdout_truncated ? ' (truncated)' : ''}
          </Text>
          <Code block className="console-output" data-testid="job-stdout">
            {job.result.stdout || '(empty)'}
          </Code>
          <Text fw={700} size="sm">
            stderr{job.result.stderr_truncated ? ' (truncated)' : ''}
          </Text>
          <Code block className="console-output" data-testid="job-stderr">
            {job.result.stderr || '(empty)'}
          </Code>
        </Stack>
      )}
    </Modal>
  );
}
