import {
  Badge,
  Button,
  Checkbox,
  Group,
  Loader,
  Pagination,
  SegmentedControl,
  Select,
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
import { flexRender, getCoreRowModel, useReactTable, type Row } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useEffect, useMemo, useState } from 'react';
import { clientListQueryOptions } from '../api/queries.js';
import type { Client } from '../api/types.js';
import { BulkActions, type Selection } from '../components/bulk-actions.js';
import { columnIdsOf, columnsById } from '../components/client-columns.js';
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
const ROW_HEIGHT = 45;

/**
 * One row, memoised: scrolling re-renders the body on every frame (the virtualiser's window moves), and only the
 * rows entering the window should render then. Plain markup (console.css's `.virtual-rows`), not Mantine's
 * table components, since a frame mounts several rows at once.
 */
const ClientRow = memo(function ClientRow({
  row,
  striped,
  selected,
  toggle,
}: {
  row: Row<Client>;
  /** Every other row of the list (by its index in the list, so stripes stay put while scrolling). */
  striped: boolean;
  selected: boolean;
  toggle: (id: string, state: 'connected' | 'disconnected', on: boolean) => void;
}) {
  return (
    <tr data-testid="client-row" data-striped={striped || undefined} style={{ height: ROW_HEIGHT }}>
      <td>
        <input
          type="checkbox"
          className="row-check"
          aria-label={`Select ${row.original.name || row.original.id}`}
          checked={selected}
          onChange={(e) => toggle(row.id, row.original.connection_state, e.currentTarget.checked)}
        />
      </td>
      {row.getVisibleCells().map((cell) => (
        <td key={cell.id} className={cell.column.columnDef.meta?.clip ? 'clip' : undefined}>
          {flexRender(cell.column.columnDef.cell, cell.getContext())}
        </td>
      ))}
    </tr>
  );
});

/**
 * The virtualised rows. Its own component so that scrolling (the virtualiser's window moving every frame)
 * re-renders only the body, not the page's filters, views and header.
 */
function ClientRows({
  rows,
  columnCount,
  scrollElement,
  selection,
  toggle,
}: {
  rows: Row<Client>[];
  columnCount: number;
  /**
   * The scrolling box, from state (a callback ref), not a ref object: the box is the body's parent, so its ref is
   * set only after the body's first layout effect, and with the list already cached (the route's loader) nothing
   * else would render the body again to show its rows.
   */
  scrollElement: HTMLDivElement | null;
  selection: Selection;
  toggle: (id: string, state: 'connected' | 'disconnected', on: boolean) => void;
}) {
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollElement,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const padTop = items[0]?.start ?? 0;
  const padBottom = items.length > 0 ? virtualizer.getTotalSize() - (items[items.length - 1]?.end ?? 0) : 0;
  return (
    <tbody className="virtual-rows">
      {padTop > 0 && (
        <tr aria-hidden="true">
          <td style={{ height: padTop, padding: 0, border: 0 }} colSpan={columnCount} />
        </tr>
      )}
      {items.map((item) => {
        const row = rows[item.index];
        if (!row) return null;
        return (
          <ClientRow
            key={row.id}
            row={row}
            striped={item.index % 2 === 0}
            selected={selection.all || selection.rows.has(row.id)}
            toggle={toggle}
          />
        );
      })}
      {padBottom > 0 && (
        <tr aria-hidden="true">
          <td style={{ height: padBottom, padding: 0, border: 0 }} colSpan={columnCount} />
        </tr>
      )}
    </tbody>
  );
}

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
  const [scrollElement, setScrollElement] = useState<HTMLDivElement | null>(null);

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
      <div className="clients-scroll" ref={setScrollElement} tabIndex={0} aria-label="Clients list">
        <Table className="clients-table" verticalSpacing="xs" miw={900}>
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
          <ClientRows
            rows={table.getRowModel().rows}
            columnCount={columns.length + 1}
            scrollElement={scrollElement}
            selection={selection}
            toggle={toggleRow}
          />
        </Table>
        {list.isSuccess && rows.length === 0 && (
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
        )}
      </div>
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
          <Select
            aria-labelledby="page-size-label"
            w={130}
            value={String(limit)}
            data={PAGE_SIZES.map((size) => ({ value: String(size), label: `${size} / page` }))}
            onChange={(value) => update({ limit: value ? Number(value) : undefined, page: undefined })}
            allowDeselect={false}
          />
        </Group>
      </Group>
    </Stack>
  );
}
