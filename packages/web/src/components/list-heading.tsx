import { Badge, Group, Loader, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/**
 * The top of a list page: its title, a spinner while the list reloads, the count badge and the page's actions
 * (e.g. "New run"), on one line that wraps on a narrow screen.
 */
export function ListHeading(props: {
  title: string;
  fetching: boolean;
  /** The badge's text, e.g. "3 runs". */
  count: ReactNode;
  countTestId: string;
  children?: ReactNode;
}) {
  return (
    <Group justify="space-between" align="center">
      <Title order={1} size="h2">
        {props.title}
      </Title>
      <Group gap="xs">
        {props.fetching && <Loader size="xs" role="status" aria-label="Loading" />}
        <Badge variant="light" size="lg" data-testid={props.countTestId}>
          {props.count}
        </Badge>
        {props.children}
      </Group>
    </Group>
  );
}
