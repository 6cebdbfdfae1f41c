import { Alert } from '@mantine/core';
import { ApiError } from '../api/api-error.js';

/** Any failure shown with the API's own title and detail. */
export function ErrorAlert({ error, title }: { error: unknown; title?: string }) {
  const apiError = error instanceof ApiError ? error : undefined;
  const heading = title ?? apiError?.title ?? 'The request failed';
  const detail = apiError
    ? [title ? apiError.title : '', apiError.detail].filter(Boolean).join(': ')
    : error instanceof Error
      ? error.message
      : String(error);
  return (
    <Alert color="red" title={heading} role="alert">
      {detail}
    </Alert>
  );
}
