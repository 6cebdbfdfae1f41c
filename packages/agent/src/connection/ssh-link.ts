import type { Duplex } from 'node:stream';
import type { Client, ClientChannel } from 'ssh2';
import { ssh2 } from '@svc/platform/ssh2-client';
import { connectWebSocket, WebSocketHandshakeError } from '@svc/platform';
import { AGENT_AHEAD_HEADER, AGENT_WAIT_HEADER, CONTROL_SUBSYSTEM, WS_SUBPROTOCOL } from '@svc/protocol';
import type { Credentials } from '../config/auth.js';
import { AGENT_CIPHERS } from './ciphers.js';
import { fingerprintMatches, md5Fingerprint } from './fingerprint.js';
import { LinkError, classifySshError } from './link-error.js';
import { classifyTlsError, plainLinkHint } from './tls-error.js';
import { upgradeRefusal } from './upgrade-refusal.js';

export interface LinkOptions {
  /** ws:// or wss:// URL of svcd's agent listener. */
  url: string;
  credentials: Credentials;
  /** Expected fingerprint or its start; undefined accepts any host key. */
  fingerprint: string | undefined;
  /**
   * PEM certificates trusted for a wss:// URL instead of the system's CAs (`--tls-ca`); `source` names the file
   * and setting in messages. The SSH host key is checked against `fingerprint` either way.
   */
  tlsCa?: { pem: string; path: string; setting: string } | undefined;
  /** Limit for the WebSocket upgrade and, separately, for the SSH handshake including authentication. */
  handshakeTimeoutMs?: number;
  signal?: AbortSignal;
  /** The local address to connect from (default: the system's choice); the load simulator spreads over 127.x. */
  localAddress?: string | undefined;
  /**
   * Told each time svcd says it keeps the upgrade waiting for a place (busy with other agents' handshakes), with
   * about how many wait before it; each such word restarts the deadline for the upgrade.
   */
  onWaiting?: ((ahead: number | undefined) => void) | undefined;
}

/** An authenticated SSH connection to svcd inside a WebSocket, with the control channel open. */
export interface Link {
  /** MD5 colon-hex fingerprint of svcd's host key. */
  readonly fingerprint: string;
  readonly control: ClientChannel;
  readonly ssh: Client;
  /** Resolves with a reason once the connection is gone, whoever closed it. */
  readonly closed: Promise<string>;
  /** Ends the SSH connection politely; the socket is cut if that takes more than `graceMs`. */
  close(graceMs?: number): void;
  /** Cuts the connection at once, e.g. when svcd stopped answering. */
  destroy(): void;
}

/**
 * Opens WebSocket (subprotocol svc-v1) → SSH (password auth, host key checked against the configured
 * fingerprint) → session channel with subsystem svc-control. Rejects with a LinkError saying what failed.
 */
export function openLink(options: LinkOptions): Promise<Link> {
  const timeout = options.handshakeTimeoutMs ?? 30_000;
  const { url, credentials, fingerprint: expected, signal } = options;
  return new Promise<Link>((resolve, reject) => {
    if (signal?.aborted) return reject(new LinkError('aborted', 'the agent is stopping'));
    const { tlsCa } = options;
    const trust = tlsCa ? { kind: 'file' as const, ...tlsCa } : { kind: 'system' as const };
    const ssh = new ssh2.Client();
    const opening = new AbortController();
    let sock: Duplex | undefined;
    let settled = false;
    let actual: string | undefined;
    let mismatch = false;
    let lastError: string | undefined;
    let markClosed: (reason: string) => void = () => undefined;
    const closed = new Promise<string>((done) => (markClosed = done));

    const destroy = () => {
      ssh.end();
      opening.abort();
      sock?.destroy();
    };
    const fail = (error: LinkError) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      destroy();
      reject(error);
    };
    const onAbort = () => fail(new LinkError('aborted', 'the agent is stopping'));
    signal?.addEventListener('abort', onAbort, { once: true });

    connectWebSocket(url, {
      protocol: WS_SUBPROTOCOL,
      timeoutMs: timeout,
      ca: tlsCa?.pem,
      signal: opening.signal,
      localAddress: options.localAddress,
      headers: { [AGENT_WAIT_HEADER]: '1' },
      onInterim: (_status, headers) => {
        const ahead = Number(headers.get(AGENT_AHEAD_HEADER));
        options.onWaiting?.(Number.isSafeInteger(ahead) && ahead >= 0 ? ahead : undefined);
      },
    }).then(
      (stream) => {
        if (settled) return stream.destroy();
        sock = stream;
        // Failures of the stream surface as ssh2 'error'/'close'; this only keeps them from being unhandled.
        stream.on('error', (err) => (lastError = err.message));
        ssh.connect({
          sock: stream,
          username: credentials.id,
          password: credentials.password,
          readyTimeout: timeout,
          algorithms: { cipher: AGENT_CIPHERS },
          // Liveness is checked with control-channel pings, which also prove the server side is working.
          keepaliveInterval: 0,
          hostVerifier: (key: Buffer) => {
            actual = md5Fingerprint(key);
            mismatch = !fingerprintMatches(actual, expected);
            return !mismatch;
          },
        });
      },
      (err: Error & { code?: string }) => {
        lastError = err.message;
        fail(
          classifyTlsError(err, url, trust) ??
            new LinkError(
              'unreachable',
              `cannot open a WebSocket to ${url}: ${err.message}${upgradeRefusal(err)}${plainLinkHint(err, url)}`,
              err instanceof WebSocketHandshakeError ? err.details.retryAfterMs : undefined,
            ),
        );
      },
    );
    ssh.on('error', (err) => {
      lastError = err.message;
      if (mismatch)
        return fail(
          new LinkError(
            'fingerprint',
            `svcd's host key fingerprint is ${actual ?? '?'} but the configured fingerprint is ${expected ?? ''}: ` +
              'refusing to connect (fix --fingerprint / [client] fingerprint if svcd changed its key on purpose)',
          ),
        );
      fail(classifySshError(err, credentials.id));
    });
    ssh.on('close', () => {
      fail(
        new LinkError(
          'unreachable',
          `svcd closed the connection during the handshake${lastError ? `: ${lastError}` : ''}`,
        ),
      );
      markClosed(lastError ?? 'connection closed');
    });
    ssh.on('ready', () => {
      ssh.subsys(CONTROL_SUBSYSTEM, (err, channel) => {
        if (err) return fail(new LinkError('protocol', `svcd refused the control channel: ${err.message}`));
        if (settled) return channel.destroy();
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        resolve({
          fingerprint: actual ?? '',
          control: channel,
          ssh,
          closed,
          close: (graceMs = 2000) => {
            ssh.end();
            setTimeout(() => sock?.destroy(), graceMs).unref();
          },
          destroy,
        });
      });
    });
  });
}
