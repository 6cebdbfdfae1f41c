import { Alert, Text } from '@mantine/core';
import { ApiError } from '../api/api-error.js';
import { ADMINISTRATORS } from '../lib/rights.js';
import { ErrorAlert } from './error-alert.js';

/**
 * A page's failed load. A 403 from svcd is the API refusing the user (the console only hides menu lines): it
 * says which group the page needs, with svcd's own words below.
 */
export function PageError({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 403) {
    return (
      <Alert color="orange" title={`This page needs the ${ADMINISTRATORS} group`} data-testid="needs-admin">
        <Text size="sm">
          svcd refused: {error.title}
          {error.detail ? ` (${error.detail})` : ''}. Ask an administrator to add you to {ADMINISTRATORS}.
        </Text>
      </Alert>
    );
  }
  return <ErrorAlert error={error} />;
}
