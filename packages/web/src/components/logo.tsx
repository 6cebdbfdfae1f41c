import { Group, Text } from '@mantine/core';

export function Logo() {
  return (
    <Group gap={8} wrap="nowrap">
      <svg width="26" height="26" viewBox="0 0 32 32" aria-hidden="true">
        <rect width="32" height="32" rx="7" fill="var(--mantine-color-indigo-6)" />
        <path d="M9 11h14M9 16h10M9 21h14" stroke="#fff" strokeWidth="2.5" strokeLinecap="round" />
      </svg>
      <Text fw={700} size="lg">
        svc
      </Text>
    </Group>
  );
}
