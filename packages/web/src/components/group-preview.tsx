import { Badge, Card, Group, List, Loader, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { groupPreviewQuery } from '../api/group-queries.js';
import type { GroupParams } from '../lib/group-rules.js';
import { ErrorAlert } from './error-alert.js';
import { AnchorLink } from './links.js';

/** The clients the rule being edited would hold, asked of svcd as the rule changes (not saved). */
export function GroupPreview({ params }: { params: GroupParams }) {
  const [debounced] = useDebouncedValue(params, 250);
  const preview = useQuery({ ...groupPreviewQuery(debounced), placeholderData: keepPreviousData });
  const data = preview.data;
  return (
    <Card withBorder padding="lg" aria-label="Membership preview" component="section">
      <Group gap="sm" mb="xs">
        <Title order={2} size="h4">
          Preview
        </Title>
        {preview.isFetching && <Loader size="xs" role="status" aria-label="Updating the preview" />}
      </Group>
      {preview.error && <ErrorAlert error={preview.error} title="The rule is not valid" />}
      {data && (
        <>
          <Text aria-live="polite" data-testid="preview-count">
            {data.num_clients} {data.num_clients === 1 ? 'client matches' : 'clients match'} (
            {data.num_clients_connected} connected)
          </Text>
          {data.num_clients === 0 ? (
            <Text size="sm" c="dimmed">
              Add or loosen a rule: a group with no rule holds no client.
            </Text>
          ) : (
            <List size="sm" mt="xs" data-testid="preview-clients">
              {data.clients.map((client) => (
                <List.Item key={client.id}>
                  <AnchorLink to="/clients/$clientId" params={{ clientId: client.id }}>
                    {client.name || client.id}
                  </AnchorLink>{' '}
                  <Text span size="xs" c="dimmed">
                    {client.id}
                    {client.hostname ? ` · ${client.hostname}` : ''}
                  </Text>{' '}
                  {client.connection_state === 'disconnected' && (
                    <Badge size="xs" color="gray" miw="max-content">
                      disconnected
                    </Badge>
                  )}
                </List.Item>
              ))}
            </List>
          )}
          {data.num_clients > data.clients.length && (
            <Text size="sm" c="dimmed">
              The first {data.clients.length} are listed.
            </Text>
          )}
        </>
      )}
    </Card>
  );
}
