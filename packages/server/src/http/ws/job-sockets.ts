import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { UserAccess, type AccessControl } from '../../core/access/access-control.js';
import type { Authenticator } from '../../core/auth/authenticator.js';
import type { Permissions } from '../../core/permissions/permissions.js';
import type { MultiJobsService } from '../../core/jobs/multi-jobs-service.js';
import { toAppError } from '../errors.js';
import { answerOnSocket, rawErrorOf } from '../raw-reply.js';
import { FollowSocketSession } from './follow-socket.js';
import { JobSocketSession, type JobSocketKind } from './job-socket.js';
import { authenticateUpgrade, checkOrigin } from './upgrade-auth.js';

/** Largest request message: a script of MAX_SCRIPT_BYTES as base64 plus ten thousand client ids fits. */
const MAX_MESSAGE_BYTES = 2 * 1024 * 1024;

interface Log {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** `/ws/commands/{jid}` or `/ws/scripts/{jid}`: the jid followed, else undefined. */
function followedJid(pathname: string, prefix: string): string | undefined {
  const match = /^\/ws\/(?:commands|scripts)\/([^/]+)$/.exec(pathname.slice(prefix.length));
  if (!pathname.startsWith(prefix) || !match?.[1]) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
}

/**
 * GET {prefix}/ws/commands and {prefix}/ws/scripts on the API's HTTP server, and {prefix}/ws/commands/{jid} (or
 * ws/scripts/{jid}) following a run or job started elsewhere. The Origin and the credentials are
 * checked before the upgrade completes, so a refused request gets an ordinary HTTP error (403, 401) and never
 * becomes a socket. Returns a function that closes every open session (at shutdown).
 */
export function serveJobSockets(
  server: Server,
  prefix: string,
  deps: {
    auth: Authenticator;
    multi: MultiJobsService;
    permissions: Permissions;
    log: Log;
    access?: AccessControl | undefined;
  },
): () => void {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
  });
  const paths: Record<string, JobSocketKind> = {
    [`${prefix}/ws/commands`]: 'commands',
    [`${prefix}/ws/scripts`]: 'scripts',
  };

  const upgrade = async (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const url = new URL(request.url ?? '/', 'http://localhost');
    const kind = paths[url.pathname];
    const followed = kind ? undefined : followedJid(url.pathname, prefix);
    if (!kind && followed === undefined)
      return answerOnSocket(
        socket,
        rawErrorOf(new AppError('not_found', ERROR_CODES.routeNotFound, `No WebSocket at ${url.pathname}`)),
      );
    try {
      checkOrigin(request);
      const caller = await authenticateUpgrade(deps.auth, request, url);
      // The socket runs commands or scripts: the same named permission as POST /commands or /scripts; following
      // a run reads it, as GET /commands/{jid} does (commands).
      await deps.permissions.assert(caller.user, kind ?? 'commands');
      const access = deps.access ? await deps.access.of(caller.user) : UserAccess.UNLIMITED;
      const ending = request.headers.origin === undefined ? 'end-of-stream' : 'close-frame';
      wss.handleUpgrade(request, socket, head, (ws) => {
        if (kind)
          new JobSocketSession(ws, socket, ending, kind, caller.user, deps.multi, deps.log, {
            check: (run) => access.assertRun(run),
          });
        else new FollowSocketSession(ws, socket, ending, followed ?? '', deps.multi, deps.log, access.scope);
      });
    } catch (err) {
      const appError = toAppError(err);
      if (appError.kind === 'internal') deps.log.warn({ err }, 'job socket upgrade failed');
      answerOnSocket(socket, rawErrorOf(appError));
    }
  };
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    void upgrade(request, socket, head);
  });

  return () => {
    for (const client of wss.clients) client.close(1001, 'svcd is shutting down');
    // Peers that do not answer the close are cut off shortly after.
    setTimeout(() => {
      for (const client of wss.clients) client.terminate();
    }, 1000).unref();
    wss.close();
  };
}
