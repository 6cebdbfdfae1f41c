import type { IncomingMessage } from 'node:http';
import { AppError, ERROR_CODES } from '@svc/protocol';
import type { Authenticator, Caller } from '../../core/auth/authenticator.js';
import { assertTokenScope } from '../../core/api-tokens/token-scope.js';
import { authRequired } from '../auth.js';

/**
 * A browser page of another site must not drive the sockets with the user's credentials: an Origin header, when
 * sent, must name this API's own host. OpenRPort's command-line client sends none.
 */
export function checkOrigin(request: IncomingMessage): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let host: string | undefined;
  try {
    host = new URL(origin).host.toLowerCase();
  } catch {
    host = undefined;
  }
  if (host === undefined || host !== (request.headers.host ?? '').toLowerCase())
    throw new AppError(
      'forbidden',
      ERROR_CODES.foreignOrigin,
      `Origin '${origin}' is not allowed`,
      'open the socket from a page of this API host, or from a program that sends no Origin',
    );
}

/** `?access_token=<token>`, else an Authorization header (Basic or Bearer); 401 without either. */
export async function authenticateUpgrade(
  auth: Authenticator,
  request: IncomingMessage,
  url: URL,
): Promise<Caller> {
  const token = url.searchParams.get('access_token');
  if (token) return auth.checkToken(token);
  const header = request.headers.authorization;
  if (!header) throw authRequired();
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && value) return auth.checkToken(value);
  if (scheme === 'basic' && value) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) {
      const caller = await auth.checkBasic(
        decoded.slice(0, colon),
        decoded.slice(colon + 1),
        request.socket.remoteAddress ?? '',
      );
      assertTokenScope(caller, 'GET', url.pathname);
      return caller;
    }
  }
  throw new AppError(
    'unauthenticated',
    ERROR_CODES.authRequired,
    'Malformed Authorization header',
    'use "Basic base64(username:password)", "Bearer <token>" or ?access_token=<token>',
  );
}
