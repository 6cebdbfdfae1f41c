import { Badge } from '@mantine/core';

const COLORS: Record<string, string> = {
  started: 'teal.9',
  skipped: 'yellow.9',
  missed: 'orange.9',
  failed: 'red.9',
};

/** What one firing of a schedule did, as a badge with the whole word. */
export function FiringOutcomeBadge({ outcome }: { outcome: string }) {
  return (
    <Badge color={COLORS[outcome] ?? 'gray.8'} miw="max-content" data-testid="firing-outcome">
      {outcome}
    </Badge>
  );
}
