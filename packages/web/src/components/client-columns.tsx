import { Badge } from '@mantine/core';
import { createColumnHelper, type RowData } from '@tanstack/react-table';
import type { Client } from '../api/types.js';
import type { ClientSortField } from '../lib/client-filters.js';
import { formatBytes } from '../lib/format.js';
import { Chip } from './chip.js';
import { ClientRowLink } from './row-link.js';
import { TimeAgo } from './time-ago.js';

declare module '@tanstack/react-table' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- the library's declaration has both parameters
  interface ColumnMeta<TData extends RowData, TValue> {
    /** The GET /clients sort field of a sortable column. */
    sort?: ClientSortField;
    /** A long value cut with an ellipsis (the whole value on hover). */
    clip?: boolean;
  }
}

const column = createColumnHelper<Client>();

const STATE_COLORS = { connected: 'teal.9', disconnected: 'gray.7' } as const;

export function StateBadge({ state }: { state: Client['connection_state'] }) {
  return (
    // Never cut to "c…" by a narrow column: the state is the one word a user looks for.
    <Badge color={STATE_COLORS[state]} variant="filled" miw="max-content">
      {state}
    </Badge>
  );
}

/**
 * The columns of the clients list; `meta.sort` names the API's sort field where the column sorts. The cells are
 * plain markup (chips, a plain link): the list is virtualised, and rows mount on every scrolled frame.
 */
export const CLIENT_COLUMNS = [
  column.accessor('name', {
    header: 'Name',
    meta: { sort: 'name' satisfies ClientSortField },
    cell: (info) => (
      <ClientRowLink clientId={info.row.original.id} strong>
        {info.getValue() || info.row.original.id}
      </ClientRowLink>
    ),
  }),
  column.accessor('id', {
    header: 'ID',
    meta: { sort: 'id' satisfies ClientSortField },
    cell: (info) => <span className="mono">{info.getValue()}</span>,
  }),
  column.accessor('connection_state', {
    header: 'State',
    meta: { sort: 'connection_state' satisfies ClientSortField },
    cell: (info) => <Chip color={STATE_COLORS[info.getValue()]}>{info.getValue()}</Chip>,
  }),
  column.accessor('os', {
    header: 'OS',
    meta: { sort: 'os' satisfies ClientSortField, clip: true },
    cell: (info) => <span title={info.getValue()}>{info.getValue()}</span>,
  }),
  column.accessor('hostname', {
    header: 'Hostname',
    meta: { sort: 'hostname' satisfies ClientSortField, clip: true },
  }),
  column.accessor('tags', {
    header: 'Tags',
    cell: (info) => (
      <span className="chips">
        {info.getValue().map((tag) => (
          <Chip key={tag} small variant="outline">
            {tag}
          </Chip>
        ))}
      </span>
    ),
  }),
  column.accessor('version', { header: 'Agent', meta: { sort: 'version' satisfies ClientSortField } }),
  column.accessor('connected_at', {
    header: 'Connected',
    cell: (info) => <TimeAgo iso={info.getValue()} />,
  }),
];

/** Columns a user may add (column chooser, saved views); hidden unless asked for. */
export const EXTRA_CLIENT_COLUMNS = [
  column.accessor('os_full_name', { header: 'OS (full)', meta: { clip: true } }),
  column.accessor('os_arch', { header: 'Arch' }),
  column.accessor('num_cpus', { header: 'CPUs' }),
  column.accessor('mem_total', {
    header: 'Memory',
    cell: (info) => (info.getValue() ? formatBytes(info.getValue()) : ''),
  }),
  column.accessor('address', { header: 'Connected from', meta: { clip: true } }),
  column.accessor('ipv4', {
    header: 'IPv4',
    meta: { clip: true },
    cell: (info) => info.getValue().join(', '),
  }),
  column.accessor('labels', {
    header: 'Labels',
    cell: (info) => (
      <span className="chips">
        {Object.entries(info.getValue()).map(([key, value]) => (
          <Chip key={key} small variant="light">
            {key}: {value}
          </Chip>
        ))}
      </span>
    ),
  }),
  column.accessor('timezone', { header: 'Timezone', meta: { clip: true } }),
  column.accessor('client_auth_id', { header: 'Credential' }),
  column.accessor('disconnected_at', {
    header: 'Disconnected',
    cell: (info) => <TimeAgo iso={info.getValue()} />,
  }),
];

const columnId = (def: { id?: string; accessorKey?: unknown }): string =>
  def.id ?? (typeof def.accessorKey === 'string' ? def.accessorKey : '');

/** Every column by id, the default ones first. */
export const ALL_CLIENT_COLUMNS = [...CLIENT_COLUMNS, ...EXTRA_CLIENT_COLUMNS];
export const COLUMN_LABELS: ReadonlyMap<string, string> = new Map(
  ALL_CLIENT_COLUMNS.map((def) => [columnId(def), String(def.header)]),
);
export const DEFAULT_COLUMN_IDS: readonly string[] = CLIENT_COLUMNS.map(columnId);

/** The columns a `cols` search value names, in its order (unknown ids dropped; the default when none is left). */
export function columnIdsOf(cols: string | undefined): string[] {
  const ids = (cols ?? '').split(',').filter((id) => COLUMN_LABELS.has(id));
  return ids.length > 0 ? [...new Set(ids)] : [...DEFAULT_COLUMN_IDS];
}

export function columnsById(ids: readonly string[]) {
  return ids.flatMap((id) => ALL_CLIENT_COLUMNS.filter((def) => columnId(def) === id));
}
