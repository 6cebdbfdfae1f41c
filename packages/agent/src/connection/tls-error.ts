import { LinkError } from './link-error.js';

/** Where the agent's trusted certificates come from, for messages. */
export type TrustSource = { kind: 'system' } | { kind: 'file'; path: string; setting: string };

const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);

const trusted = (trust: TrustSource) =>
  trust.kind === 'file' ? `the CA in ${trust.path} (${trust.setting})` : "the system's trusted CAs";

/**
 * A TLS failure while opening the WebSocket, as a LinkError of kind `tls` saying what to fix; undefined when the
 * error is not about TLS (then it is an ordinary network failure).
 */
export function classifyTlsError(
  err: Error & { code?: string },
  url: string,
  trust: TrustSource,
): LinkError | undefined {
  const code = err.code ?? '';
  const what = `${err.message}${code && !err.message.includes(code) ? `, ${code}` : ''}`;
  if (UNTRUSTED.has(code)) {
    const fix =
      trust.kind === 'file'
        ? `check that ${trust.path} holds the CA that signed svcd's certificate`
        : 'pass the CA that signed it with --tls-ca FILE or [client] tls_ca';
    return new LinkError(
      'tls',
      `svcd's TLS certificate at ${url} is not signed by ${trusted(trust)} (${what}): refusing to connect; ${fix}`,
    );
  }
  if (OUT_OF_DATE.has(code))
    return new LinkError(
      'tls',
      `svcd's TLS certificate at ${url} is out of date (${what}): renew it on svcd`,
    );
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new LinkError(
      'tls',
      `svcd's TLS certificate does not name the host of ${url} (${what}): connect with a name the ` +
        'certificate lists, or add this one to it',
    );
  if (/wrong version number|packet length too long|http request/i.test(err.message))
    return new LinkError(
      'tls',
      `svcd at ${url} does not speak TLS (${what}): use http:// (ws://) unless svcd's [server] sets tls_cert`,
    );
  if (/protocol version|unsupported protocol|no protocols available/i.test(err.message))
    return new LinkError(
      'tls',
      `svcd at ${url} and this agent share no TLS version (${what}): svcd's [server] tls_min may be above ` +
        "what this agent's Node.js supports",
    );
  return undefined;
}

/** A plain ws:// connection that the server hung up on may have reached a TLS port; says so. */
export function plainLinkHint(err: Error, url: string): string {
  if (url.startsWith('ws:') && /socket hang up|ECONNRESET/.test(err.message))
    return " (if svcd's [server] sets tls_cert, use https:// in the server address)";
  return '';
}
