import { ERROR_CODES } from '@svc/protocol';
import { session } from '../session/session.js';
import { ApiError, apiErrorOf } from './api-error.js';

export const API_BASE = '/api/v1';

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  query?: URLSearchParams;
  body?: unknown;
  /** Another Authorization than the session's (login with Basic, the second step with the login token). */
  authorization?: string;
}

/**
 * One call to svcd's API with the session's token. A 401 on a session call ends the session as expired (the
 * router then shows the login page and returns to this page after it).
 */
export async function apiRequest<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const authorization =
    options.authorization ?? (session.get() ? `Bearer ${session.get()?.token}` : undefined);
  if (authorization) headers.authorization = authorization;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const query = options.query?.toString();
  let response: Response;
  try {
    response = await fetch(`${API_BASE}${path}${query ? `?${query}` : ''}`, {
      method: options.method ?? 'GET',
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
  } catch (err) {
    throw new ApiError(0, 'NETWORK', 'svcd cannot be reached', err instanceof Error ? err.message : '');
  }
  if (response.status === 204) return undefined as T;
  const body: unknown = await response.json().catch(() => null);
  if (response.ok) return body as T;
  const error = apiErrorOf(response.status, body);
  // A 401 for a wrong password (login, the vault's unlock) is an answer to show, not an ended session.
  const wrongPassword =
    error.code === ERROR_CODES.badCredentials || error.code === ERROR_CODES.vaultWrongPassword;
  if (response.status === 401 && !options.authorization && !wrongPassword) {
    session.end('expired');
  }
  throw error;
}
