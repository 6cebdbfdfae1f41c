import { WebSocketHandshakeError } from '@svc/platform';

/**
 * What svcd said when it answered the WebSocket upgrade with an error (its API error shape: the title and the
 * detail of the first error), as text to append to the message; '' for any other failure or body.
 */
export function upgradeRefusal(err: Error): string {
  if (!(err instanceof WebSocketHandshakeError) || !err.details.body) return '';
  let first: unknown;
  try {
    first = (JSON.parse(err.details.body) as { errors?: unknown[] }).errors?.[0];
  } catch {
    return '';
  }
  if (typeof first !== 'object' || first === null) return '';
  const { title, detail } = first as { title?: unknown; detail?: unknown };
  if (typeof title !== 'string' || title === '') return '';
  return ` (svcd: ${title}${typeof detail === 'string' && detail !== '' ? `; ${detail}` : ''})`;
}
