import { Table } from '@mantine/core';
import { flexRender, type Row } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useRef, type ReactNode } from 'react';
import type { Client } from '../api/types.js';
import type { Selection } from './bulk-actions.js';

export const CLIENT_ROW_HEIGHT = 45;

type Toggle = (id: string, state: 'connected' | 'disconnected', on: boolean) => void;

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
  toggle: Toggle;
}) {
  return (
    <tr data-testid="client-row" data-striped={striped || undefined} style={{ height: CLIENT_ROW_HEIGHT }}>
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
 * The scroll box's size before it is measured: the page's height less what `.clients-scroll` leaves above and
 * below it (console.css), so the first render with data already holds the rows in view.
 */
function initialRect() {
  const rem = 16;
  return { width: window.innerWidth, height: Math.max(18 * rem, window.innerHeight - 17 * rem) };
}

/**
 * The clients list: its scroll box, the header the page gives and the virtualised rows. The box belongs to this
 * component so that its ref is set before the virtualiser's first layout effect reads it, and scrolling (the
 * window moving every frame) re-renders only this component, not the page's filters, views and header (`head`
 * is the page's element, unchanged while scrolling). `after` goes below the table (the empty state).
 */
export function ClientTable({
  head,
  rows,
  columnCount,
  selection,
  toggle,
  after,
}: {
  head: ReactNode;
  rows: Row<Client>[];
  columnCount: number;
  selection: Selection;
  toggle: Toggle;
  after?: ReactNode;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => CLIENT_ROW_HEIGHT,
    overscan: 12,
    initialRect: initialRect(),
  });
  const items = virtualizer.getVirtualItems();
  const padTop = items[0]?.start ?? 0;
  const padBottom = items.length > 0 ? virtualizer.getTotalSize() - (items[items.length - 1]?.end ?? 0) : 0;
  return (
    <div className="clients-scroll" ref={scrollRef} tabIndex={0} aria-label="Clients list">
      <Table className="clients-table" verticalSpacing="xs" miw={900}>
        {head}
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
      </Table>
      {after}
    </div>
  );
}
