import { Stack, Text, Title } from '@mantine/core';
import { ButtonLink } from './links.js';

export function NotFoundPage() {
  return (
    <Stack align="center" mt="xl" gap="sm">
      <Title order={1}>Page not found</Title>
      <Text c="dimmed">The console has no page at this address.</Text>
      <ButtonLink to="/">Go to the dashboard</ButtonLink>
    </Stack>
  );
}
