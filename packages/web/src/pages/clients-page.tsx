import {
  Badge,
  Button,
  Checkbox,
  Group,
  Loader,
  NativeSelect,
  Pagination,
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { flexRender, getCoreRowModel, useReactTable } from '@tanstack/react-table';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { clientListQueryOptions } from '../api/queries.js';
import type { Client } from '../api/types.js';
import { BulkActions, type Selection } from '../components/bulk-actions.js';
import { columnIdsOf, columnsById } from '../components/client-columns.js';
import { ClientTable } from '../components/client-table.js';
import { ColumnChooser } from '../components/column-chooser.js';
import { ErrorAlert } from '../components/error-alert.js';
import { SavedViewsBar } from '../components/saved-views-bar.js';
import {
  DEFAULT_PAGE_SIZE,
  isFiltered,
  nextSort,
  PAGE_SIZES,
  viewSearchString,
  type ClientSearch,
} from '../lib/client-filters.js';

const route = getRouteApi('/console/clients');

function SortMark({ sort, field }: { sort: string; field: string }) {
  if (sort === field) return <span aria-hidden="true">▲</span>;
  if (sort === `-${field}`) return <span aria-hidden="true">▼</span>;
  return null;
}

function Filters({
  search,
  update,
}: {
  search: ClientSearch;
  update: (next: Partial<ClientSearch>) => void;
}) {
  const [text, setText] = useState(search.q ?? '');
  const [tags, setTags] = useState(search.tags ?? '');
  const pushText = useDebouncedCallback((q: string) => update({ q: q || undefined, page: undefined }), 250);
  const pushTags = useDebouncedCallback(
    (t: string) => update({ tags: t || undefined, page: undefined }),
    250,
  );
  return (
    <Group align="end" gap="sm">
      <TextInput
        label="Search"
        placeholder="name, id, address, os…"
        value={text}
        onChange={(e) => {
          setText(e.currentTarget.value);
          pushText(e.currentTarget.value.trim());
        }}
        w={{ base: '100%', xs: 260 }}
        type="search"
      />
      <TextInput
        label="Tags"
        placeholder="web,db"
        value={tags}
        onChange={(e) => {
          setTags(e.currentTarget.value);
          pushTags(e.currentTarget.value.trim());
        }}
        w={{ base: '100%', xs: 160 }}
      />
      <Stack gap={4}>
        <Text size="sm" fw={500} id="state-filter-label">
          State
        </Text>
        <SegmentedControl
          aria-labelledby="state-filter-label"
          value={search.state ?? 'all'}
          onChange={(value) => update({ state: value === 'all' ? undefined : value, page: undefined })}
          data={[
            { value: 'all', label: 'All' },
            { value: 'connected', label: 'Connected' },
            { value: 'disconnected', label: 'Disconnected' },
          ]}
        />
      </Stack>
    </Group>
  );
}

export function ClientsPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const update = (next: Partial<ClientSearch>) =>
    void navigate({ search: (prev) => ({ ...prev, ...next }), replace: true });
  const list = useQuery({ ...clientListQueryOptions(search), placeholderData: keepPreviousData });
  const rows: Client[] = list.data?.data ?? [];
  const count = list.data?.meta.count ?? 0;
  const limit = search.limit ?? DEFAULT_PAGE_SIZE;
  const pages = Math.max(1, Math.ceil(count / limit));
  const sort = search.sort ?? 'name';
  const columnIds = columnIdsOf(search.cols);
  const columns = useMemo(() => columnsById(columnIdsOf(search.cols)), [search.cols]);
  const [selection, setSelection] = useState<Selection>({ all: false, rows: new Map() });
  // A new filter is another set of clients: the selection starts again.
  const filterKey = viewSearchString({ ...search, cols: undefined, sort: undefined, limit: undefined });
  useEffect(
    // An empty selection is kept as it is: no second render of the page on every filter change.
    () => setSelection((prev) => (prev.all || prev.rows.size > 0 ? { all: false, rows: new Map() } : prev)),
    [filterKey],
  );
  const selectedCount = selection.all ? count : selection.rows.size;
  const pageSelected = !selection.all && rows.length > 0 && rows.every((r) => selection.rows.has(r.id));
  const toggleRow = useCallback(
    (id: string, state: 'connected' | 'disconnected', on: boolean) =>
      setSelection((prev) => {
        const next = new Map(prev.all ? [] : prev.rows);
        if (on) next.set(id, state);
        else next.delete(id);
        return { all: false, rows: next };
      }),
    [],
  );
  const togglePage = (on: boolean) =>
    setSelection((prev) => {
      const next = new Map(prev.all ? [] : prev.rows);
      for (const row of rows) {
        if (on) next.set(row.id, row.connection_state);
        else next.delete(row.id);
      }
      return { all: false, rows: next };
    });

  const table = useReactTable({
    data: rows,
    columns,
    getCoreRowModel: getCoreRowModel(),
    manualSorting: true,
    manualPagination: true,
    getRowId: (row) => row.id,
  });

  return (
    <Stack>
      <Group justify="space-between" align="center">
        <Title order={1} size="h2">
          Clients
        </Title>
        <Group gap="xs">
          {list.isFetching && <Loader size="xs" role="status" aria-label="Loading" />}
          <Badge variant="light" size="lg" data-testid="clients-count">
            {count} {count === 1 ? 'client' : 'clients'}
          </Badge>
        </Group>
      </Group>
      <SavedViewsBar search={search} open={(next) => void navigate({ search: next })} />
      <Group align="end" justify="space-between" gap="sm">
        <Filters key={search.view ?? ''} search={search} update={update} />
        <ColumnChooser
          shown={columnIds}
          change={(ids) => update({ cols: ids ? ids.join(',') : undefined })}
        />
      </Group>
      {list.error && <ErrorAlert error={list.error} />}
      <BulkActions
        search={search}
        selection={selection}
        count={selectedCount}
        clear={() => setSelection({ all: false, rows: new Map() })}
      />
      {pageSelected && count > rows.length && (
        <Group gap="xs">
          <Text size="sm">All {rows.length} clients on this page are selected.</Text>
          <Button size="compact-sm" variant="light" onClick={() => setSelection({ all: true })}>
            Select all {count} clients matching the filter
          </Button>
        </Group>
      )}
      {selection.all && (
        <Text size="sm" data-testid="all-matching">
          All {count} clients matching the filter are selected.
        </Text>
      )}
      <ClientTable
        head={
          <Table.Thead>
            {table.getHeaderGroups().map((group) => (
              <Table.Tr key={group.id}>
                <Table.Th w={40}>
                  <Checkbox
                    aria-label="Select every client on this page"
                    checked={selection.all || pageSelected}
                    indeterminate={!selection.all && !pageSelected && selection.rows.size > 0}
                    onChange={(e) => togglePage(e.currentTarget.checked)}
                  />
                </Table.Th>
                {group.headers.map((header) => {
                  const field = header.column.columnDef.meta?.sort;
                  const label = flexRender(header.column.columnDef.header, header.getContext());
                  const direction =
                    sort === field ? 'ascending' : sort === `-${field}` ? 'descending' : undefined;
                  return (
                    <Table.Th key={header.id} aria-sort={direction}>
                      {field ? (
                        <button
                          type="button"
                          className="sort-button"
                          onClick={() => update({ sort: nextSort(search.sort, field), page: undefined })}
                        >
                          {label}
                          <SortMark sort={sort} field={field} />
                        </button>
                      ) : (
                        label
                      )}
                    </Table.Th>
                  );
                })}
              </Table.Tr>
            ))}
          </Table.Thead>
        }
        rows={table.getRowModel().rows}
        columnCount={columns.length + 1}
        selection={selection}
        toggle={toggleRow}
        after={
          list.isSuccess &&
          rows.length === 0 && (
            <Stack align="center" p="xl" gap="xs" data-testid="clients-empty">
              {isFiltered(search) ? (
                <>
                  <Text fw={600}>No client matches these filters.</Text>
                  <Button variant="light" onClick={() => void navigate({ search: {}, replace: true })}>
                    Clear the filters
                  </Button>
                </>
              ) : (
                <>
                  <Text fw={600}>No client has connected yet.</Text>
                  <Text c="dimmed" size="sm">
                    Start an agent with `svc --auth id:password --fingerprint … ws://this-server:port`; the
                    dashboard shows the fingerprint and the address.
                  </Text>
                </>
              )}
            </Stack>
          )
        }
      />
      <Group justify="space-between">
        <Pagination
          total={pages}
          value={search.page ?? 1}
          onChange={(page) => update({ page: page > 1 ? page : undefined })}
          getControlProps={(control) => ({ 'aria-label': `${control} page` })}
          getItemProps={(page) => ({ 'aria-label': `Page ${page}` })}
        />
        <Group gap="xs">
          <VisuallyHidden id="page-size-label">Rows per page</VisuallyHidden>
          {/* A native select: a Mantine Select (combobox, popover, floating position) costs the first render more. */}
          <NativeSelect
            aria-labelledby="page-size-label"
            w={130}
            value={String(limit)}
            data={PAGE_SIZES.map((size) => ({ value: String(size), label: `${size} / page` }))}
            onChange={(e) => update({ limit: Number(e.currentTarget.value), page: undefined })}
          />
        </Group>
      </Group>
    </Stack>
  );
}
