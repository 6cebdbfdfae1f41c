import { Button, Checkbox, Popover, Stack } from '@mantine/core';
import { ALL_CLIENT_COLUMNS, COLUMN_LABELS, DEFAULT_COLUMN_IDS } from './client-columns.js';

const ALL_IDS = [...COLUMN_LABELS.keys()];

/** Which columns the clients list shows, in the list's own order; at least one stays. */
export function ColumnChooser({
  shown,
  change,
}: {
  shown: readonly string[];
  /** The new column ids, or undefined for the default set. */
  change: (ids: string[] | undefined) => void;
}) {
  const toggle = (id: string, on: boolean) => {
    const next = on ? [...shown, id] : shown.filter((c) => c !== id);
    if (next.length === 0) return;
    // New columns go to their place in the full list, so the order stays predictable.
    const ordered = on ? ALL_IDS.filter((c) => next.includes(c)) : next;
    const isDefault =
      ordered.length === DEFAULT_COLUMN_IDS.length && ordered.every((c, i) => c === DEFAULT_COLUMN_IDS[i]);
    change(isDefault ? undefined : ordered);
  };
  return (
    <Popover position="bottom-end" withinPortal shadow="md" trapFocus>
      <Popover.Target>
        <Button variant="default">Columns ({shown.length})</Button>
      </Popover.Target>
      <Popover.Dropdown>
        <Stack gap={6} role="group" aria-label="Shown columns">
          {ALL_CLIENT_COLUMNS.map((def) => {
            const id = 'accessorKey' in def ? String(def.accessorKey) : '';
            return (
              <Checkbox
                key={id}
                label={COLUMN_LABELS.get(id)}
                checked={shown.includes(id)}
                disabled={shown.length === 1 && shown.includes(id)}
                onChange={(e) => toggle(id, e.currentTarget.checked)}
              />
            );
          })}
          <Button size="xs" variant="subtle" onClick={() => change(undefined)}>
            Default columns
          </Button>
        </Stack>
      </Popover.Dropdown>
    </Popover>
  );
}
