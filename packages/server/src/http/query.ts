import { AppError, ERROR_CODES } from '@svc/protocol';

/** Reads an optional boolean query parameter (`true`/`false`/`1`/`0`); anything else is a 400 naming it. */
export function booleanParam(query: unknown, name: string): boolean {
  const raw = (query as Record<string, unknown> | undefined)?.[name];
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new AppError(
    'invalid',
    ERROR_CODES.invalidQuery,
    `${name} must be true or false`,
    `got ${JSON.stringify(raw)}`,
  );
}
