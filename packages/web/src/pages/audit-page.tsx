import { Badge, Button, Group, Stack, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import {
  AUDIT_FILTER_KEYS,
  AUDIT_PAGE_SIZE,
  auditQuery,
  fetchAuditCsv,
  type AuditFilters,
  type AuditRow,
} from '../api/audit.js';
import { ErrorAlert } from '../components/error-alert.js';
import { TimeAgo } from '../components/time-ago.js';
import { ListPager } from '../components/list-pager.js';
import { ListHeading } from '../components/list-heading.js';
import { saveText } from '../lib/download.js';

const route = getRouteApi('/console/audit');

const LABELS: Record<(typeof AUDIT_FILTER_KEYS)[number], string> = {
  username: 'User',
  action: 'Action',
  client_id: 'Client id',
  since: 'Since (RFC 3339)',
  until: 'Until (RFC 3339)',
};

// Filled and dark enough for white text to pass axe's contrast check in both themes (as the job state badges).
const OUTCOME_COLOR = { success: 'teal.9', failure: 'yellow.9', refused: 'red.9' } as const;

function AuditRowView({ row }: { row: AuditRow }) {
  return (
    <Table.Tr data-testid="audit-row">
      <Table.Td>
        <TimeAgo iso={row.timestamp} />
      </Table.Td>
      <Table.Td>{row.username || '—'}</Table.Td>
      <Table.Td ff="monospace">{row.remote_ip}</Table.Td>
      <Table.Td>
        {row.application} <b>{row.action}</b>
      </Table.Td>
      <Table.Td>
        <Badge color={OUTCOME_COLOR[row.outcome]} miw="max-content">
          {row.outcome}
        </Badge>
      </Table.Td>
      <Table.Td style={{ wordBreak: 'break-word' }}>
        {[row.affected_id, row.client_hostname || row.client_id].filter(Boolean).join(' · ')}
      </Table.Td>
      <Table.Td ff="monospace" fz="xs" style={{ wordBreak: 'break-word' }}>
        {row.request}
      </Table.Td>
    </Table.Tr>
  );
}

export function AuditPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const page = search.page ?? 1;
  const filters: AuditFilters = Object.fromEntries(
    AUDIT_FILTER_KEYS.flatMap((k) => (search[k] ? [[k, search[k]]] : [])),
  );
  const [draft, setDraft] = useState<AuditFilters>(filters);
  const list = useQuery({
    ...auditQuery(filters, (page - 1) * AUDIT_PAGE_SIZE),
    placeholderData: keepPreviousData,
  });
  const csv = useMutation({
    mutationFn: () => fetchAuditCsv(filters),
    onSuccess: (text) => saveText('auditlog.csv', text, 'text/csv'),
  });
  const count = list.data?.meta.count ?? 0;
  const apply = (event: FormEvent) => {
    event.preventDefault();
    const next: AuditFilters = {};
    for (const key of AUDIT_FILTER_KEYS) {
      const value = draft[key]?.trim();
      if (value) next[key] = value;
    }
    void navigate({ search: next });
  };
  return (
    <Stack>
      <ListHeading
        title="Audit log"
        fetching={list.isFetching}
        count={`${count} ${count === 1 ? 'record' : 'records'}`}
        countTestId="audit-count"
      >
        <Button variant="light" onClick={() => csv.mutate()} loading={csv.isPending}>
          Export CSV
        </Button>
      </ListHeading>
      <form onSubmit={apply}>
        <Group align="end" gap="xs" wrap="wrap">
          {AUDIT_FILTER_KEYS.map((key) => (
            <TextInput
              key={key}
              label={LABELS[key]}
              value={draft[key] ?? ''}
              onChange={(e) => setDraft({ ...draft, [key]: e.currentTarget.value })}
              w={{ base: '100%', sm: 170 }}
            />
          ))}
          <Button type="submit">Filter</Button>
        </Group>
      </form>
      {csv.error && <ErrorAlert error={csv.error} />}
      {list.error && <ErrorAlert error={list.error} />}
      {list.isSuccess && count === 0 && (
        <Stack align="center" p="xl" gap="xs" data-testid="audit-empty">
          <Text fw={600}>No audit record matches.</Text>
          <Text c="dimmed" size="sm">
            Clear or widen the filters; every write, run, tunnel, login and refusal is recorded here.
          </Text>
        </Stack>
      )}
      {count > 0 && (
        <Table.ScrollContainer minWidth={900}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Time</Table.Th>
                <Table.Th>User</Table.Th>
                <Table.Th>Address</Table.Th>
                <Table.Th>What</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Target</Table.Th>
                <Table.Th>Request</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.data.map((row, i) => (
                <AuditRowView key={`${row.timestamp}-${i}`} row={row} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <ListPager
        count={count}
        pageSize={AUDIT_PAGE_SIZE}
        page={page}
        onPage={(next) => void navigate({ search: { ...filters, ...(next > 1 ? { page: next } : {}) } })}
      />
    </Stack>
  );
}
