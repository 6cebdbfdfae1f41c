import { Tooltip } from '@mantine/core';
import { formatExact, formatRelative } from '../lib/format.js';

/** A time relative to now, with the exact time in the browser's zone on hover. */
export function TimeAgo({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  const exact = formatExact(iso);
  return (
    <Tooltip label={exact} openDelay={300}>
      <time dateTime={iso} title={exact}>
        {formatRelative(iso, Date.now())}
      </time>
    </Tooltip>
  );
}
