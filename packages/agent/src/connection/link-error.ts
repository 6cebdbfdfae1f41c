/**
 * Why a link could not be opened. `fingerprint`, `auth` and `tls` (certificate not trusted, no TLS on the
 * server) are configuration problems that a quick retry does not fix; `unreachable` covers network, HTTP and
 * handshake failures; `aborted` means the agent is stopping.
 */
export type LinkFailure = 'unreachable' | 'fingerprint' | 'auth' | 'tls' | 'protocol' | 'aborted';

export class LinkError extends Error {
  override readonly name = 'LinkError';
  constructor(
    readonly kind: LinkFailure,
    message: string,
    /** When svcd refused the upgrade and said when to come back (Retry-After). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

interface Ssh2Error extends Error {
  level?: string;
}

/** Turns an ssh2 client error into a LinkError with a message that says what to check. */
export function classifySshError(err: Ssh2Error, authId: string): LinkError {
  if (err.level === 'client-authentication')
    return new LinkError(
      'auth',
      `svcd refused the credentials of client-auth-id "${authId}" (${err.message}): ` +
        'check the password and that svcd knows this id',
    );
  if (err.level === 'client-timeout')
    return new LinkError('unreachable', `the SSH handshake with svcd timed out (${err.message})`);
  if (err.level === 'protocol' || err.level === 'handshake')
    return new LinkError('protocol', `SSH handshake with svcd failed: ${err.message}`);
  return new LinkError('unreachable', err.message);
}
