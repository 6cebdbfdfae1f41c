import { AppError, ERROR_CODES, type ApiTokenScope } from '@svc/protocol';

const SCOPE_RULES: Record<ApiTokenScope, string> = {
  read: 'a read token allows GET requests only (no WebSockets); use a read+write token',
  'read+write': 'a read+write token allows every request',
  'clients-auth': 'a clients-auth token allows only /clients-auth',
};

/** The errors of personal API tokens, each with its kind (→ status) and stable code. */
export const apiTokenErrors = {
  notFound: (prefix: string) =>
    new AppError('not_found', ERROR_CODES.apiTokenNotFound, `You have no API token with prefix '${prefix}'`),
  nameTaken: (name: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.apiTokenExists,
      `You already have an API token named '${name}'`,
      'choose another name',
    ),
  prefixTaken: () =>
    new AppError(
      'conflict',
      ERROR_CODES.apiTokenExists,
      'Could not draw an unused token prefix',
      'try again',
    ),
  expiresInPast: (expiresAt: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      'expires_at: must be in the future',
      `got ${expiresAt}`,
    ),
  nothingToChange: () =>
    new AppError('invalid', ERROR_CODES.nothingToChange, 'Nothing to change', 'send name and/or expires_at'),
  expired: (prefix: string) =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.apiTokenExpired,
      `The API token '${prefix}' has expired`,
      'create a new one with POST /api/v1/me/tokens or extend it with PUT /api/v1/me/tokens/{prefix}',
    ),
  scopeRefused: (scope: ApiTokenScope, method: string, path: string) =>
    new AppError(
      'forbidden',
      ERROR_CODES.apiTokenScope,
      `The API token's scope '${scope}' does not allow ${method} ${path}`,
      SCOPE_RULES[scope],
    ),
};
