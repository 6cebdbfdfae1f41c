import { Card, Group, Loader, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import type { ClientSearch } from '../lib/client-filters.js';
import { CardLink } from './links.js';

interface StatCardProps {
  label: string;
  value: ReactNode;
  hint?: ReactNode;
  color?: string;
  loading?: boolean;
  /** The clients list this figure comes from. */
  clients?: ClientSearch;
  /** Another page this figure comes from. */
  to?: '/tunnels';
  testId?: string;
}

export function StatCard({ label, value, hint, color, loading, clients, to, testId }: StatCardProps) {
  const body = (
    <>
      <Text size="xs" tt="uppercase" fw={700} c="dimmed">
        {label}
      </Text>
      <Group gap="xs" align="baseline" mt={4}>
        {loading ? (
          <Loader size="sm" />
        ) : (
          <Text fz={32} fw={700} c={color} lh={1.1} data-testid={testId}>
            {value}
          </Text>
        )}
      </Group>
      {hint && (
        <Text size="sm" c="dimmed" mt={4}>
          {hint}
        </Text>
      )}
    </>
  );
  return clients ? (
    <CardLink withBorder padding="lg" to="/clients" search={clients}>
      {body}
    </CardLink>
  ) : to ? (
    <CardLink withBorder padding="lg" to={to}>
      {body}
    </CardLink>
  ) : (
    <Card withBorder padding="lg">
      {body}
    </Card>
  );
}
