import { Button, Card, Group, Text, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRouter } from '@tanstack/react-router';
import { useState } from 'react';
import { forgetClient } from '../api/fleet.js';
import { ErrorAlert } from './error-alert.js';

/** Removes a disconnected client's record (DELETE /clients/{id}), after a confirmation, then back to the list. */
export function ForgetClient({ clientId }: { clientId: string }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const forget = useMutation({
    mutationFn: () => forgetClient(clientId),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['client', clientId] });
      await queryClient.invalidateQueries({ queryKey: ['clients'] });
      await router.navigate({ to: '/clients' });
    },
  });
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="xs">
        Forget this client
      </Title>
      <Text size="sm" mb="sm">
        Removes its record and stored tunnels; if the agent connects again it is listed anew.
      </Text>
      <Group gap="sm">
        {confirming ? (
          <>
            <Button color="red" loading={forget.isPending} onClick={() => forget.mutate()}>
              Yes, forget {clientId}
            </Button>
            <Button variant="subtle" onClick={() => setConfirming(false)}>
              Cancel
            </Button>
          </>
        ) : (
          <Button variant="light" color="red" onClick={() => setConfirming(true)}>
            Forget this client
          </Button>
        )}
      </Group>
      {forget.error && <ErrorAlert error={forget.error} title="The client could not be forgotten" />}
    </Card>
  );
}
