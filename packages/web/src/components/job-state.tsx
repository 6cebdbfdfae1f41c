import { Badge } from '@mantine/core';

/** The colour of each job or run state (gray for any other). */
export const JOB_STATE_COLORS: Readonly<Record<string, string>> = {
  running: 'blue.8',
  successful: 'teal.9',
  failed: 'red.9',
  unknown: 'yellow.9',
};

/** A job's or run's state as a badge with the whole word. */
export function JobStateBadge({ status }: { status: string }) {
  return (
    <Badge color={JOB_STATE_COLORS[status] ?? 'gray.8'} miw="max-content" data-testid="job-state">
      {status}
    </Badge>
  );
}
