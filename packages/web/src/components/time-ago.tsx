import { formatExact, formatRelative } from '../lib/format.js';

/**
 * A time relative to now, with the exact time in the browser's zone on hover (the element's title). Plain markup:
 * lists show one in every row, and a tooltip component per row made scrolling them dearer.
 */
export function TimeAgo({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  return (
    <time dateTime={iso} title={formatExact(iso)}>
      {formatRelative(iso, Date.now())}
    </time>
  );
}
