import { Button, Card, Group, Pagination, Table, Text, Title } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { CLIENT_JOBS_PAGE, clientJobsQuery } from '../api/runs.js';
import { formatDuration } from '../lib/format.js';
import { jobDurationMs, outputPreview, type ChildJob } from '../lib/run-jobs.js';
import { ErrorAlert } from './error-alert.js';
import { JobOutputModal } from './job-output-modal.js';
import { JobStateBadge } from './job-state.js';
import { AnchorLink } from './links.js';
import { TimeAgo } from './time-ago.js';

/** A client's jobs, newest first, page by page; a job's full output on click. */
export function JobHistory({ clientId }: { clientId: string }) {
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState<ChildJob>();
  const jobs = useQuery({
    ...clientJobsQuery(clientId, (page - 1) * CLIENT_JOBS_PAGE),
    placeholderData: keepPreviousData,
  });
  const count = jobs.data?.meta.count ?? 0;
  return (
    <Card withBorder padding="lg" data-testid="job-history">
      <Title order={2} size="h4" mb="sm">
        Job history
      </Title>
      {jobs.error && <ErrorAlert error={jobs.error} />}
      {jobs.data && count === 0 && (
        <Text size="sm" c="dimmed">
          No job has run on this client yet. Run a command above, or start a run on many clients from Runs.
        </Text>
      )}
      {jobs.data && count > 0 && (
        <>
          <Table.ScrollContainer minWidth={560}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Started</Table.Th>
                  <Table.Th>Command</Table.Th>
                  <Table.Th>State</Table.Th>
                  <Table.Th>Exit</Table.Th>
                  <Table.Th>Duration</Table.Th>
                  <Table.Th>Output</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {jobs.data.data.map((job) => {
                  const ms = jobDurationMs(job, Date.now());
                  const run = job.multi_job_id;
                  return (
                    <Table.Tr key={job.jid}>
                      <Table.Td>
                        <TimeAgo iso={job.started_at ?? job.created_at} />
                      </Table.Td>
                      <Table.Td ff="monospace" maw={260} style={{ wordBreak: 'break-word' }}>
                        {(job.is_script ? 'script: ' : '') + (job.command ?? '').slice(0, 120)}
                        {run && (
                          <Text size="xs">
                            <AnchorLink to="/runs/$jid" params={{ jid: run }}>
                              part of a run
                            </AnchorLink>
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        <JobStateBadge status={job.status} />
                      </Table.Td>
                      <Table.Td>{job.exit_code ?? '—'}</Table.Td>
                      <Table.Td>{ms === undefined ? '—' : formatDuration(ms)}</Table.Td>
                      <Table.Td>
                        <Button
                          size="compact-xs"
                          variant="default"
                          onClick={() => setOpen(job)}
                          title="Show the full output"
                        >
                          {outputPreview(job, 40) || 'Show output'}
                        </Button>
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {count > CLIENT_JOBS_PAGE && (
            <Group justify="center" mt="sm">
              <Pagination
                total={Math.ceil(count / CLIENT_JOBS_PAGE)}
                value={page}
                onChange={setPage}
                aria-label="Job history pages"
              />
            </Group>
          )}
        </>
      )}
      <JobOutputModal job={open} onClose={() => setOpen(undefined)} />
    </Card>
  );
}
