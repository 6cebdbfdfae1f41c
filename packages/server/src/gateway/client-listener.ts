import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { AGENT_AHEAD_HEADER, AGENT_WAIT_HEADER, ERROR_CODES, WS_SUBPROTOCOL } from '@svc/protocol';
import {
  acceptUpgrade,
  formatDuration,
  upgradeHeaderProblem,
  type Logger,
  type WebSocketStream,
} from '@svc/platform';
import { answerClientError, type ClientError } from '../http/malformed-request.js';
import { answerOnSocket, rawErrorOf, sendError, type RawError } from '../http/raw-reply.js';
import { createListenerServer } from '../http/listener-server.js';
import { capConnections } from '../http/server-limits.js';
import { addressKey } from '../http/address-key.js';
import type { ListenerTls } from '../infra/listener-tls.js';
import type { DescriptorGauge } from '../infra/descriptor-gauge.js';
import { DescriptorExhaustionLog, keepAccepting } from '../infra/descriptor-exhaustion.js';
import { splitHostPort } from '../infra/address.js';
import {
  AdmissionAborted,
  AdmissionRefused,
  type HandshakeAdmission,
  type HandshakeTicket,
} from './handshake-admission.js';
import type { HandshakeLimiter } from './handshake-limiter.js';
import type { RefusalCounts } from './refusal-counts.js';
import { RefusalLog } from './refusal-log.js';

export interface RemoteAddress {
  ip: string;
  port: number;
}

export interface ClientListenerOptions {
  /** `[server] address`. */
  address: string;
  /** Bounds the handshakes under way; agents past it are told when to come back. */
  admission: HandshakeAdmission;
  limiter: HandshakeLimiter;
  /** Largest WebSocket message accepted from an agent. */
  maxPayloadBytes: number;
  /** `[server] upgrade_timeout`: time a new connection has to send its whole upgrade request. */
  upgradeTimeoutMs: number;
  /** `[server] max_connections`; 0 = no limit. */
  maxConnections: number;
  /** Certificate and key: agents connect with wss. */
  tls?: ListenerTls | undefined;
  /**
   * Takes an admitted agent: the WebSocket as a byte stream, the peer's address, the release of its handshake
   * slot (also released when the socket closes) and its admission ticket, to be ended at the login or the close.
   * Returns false to refuse the connection.
   */
  onAgent(stream: Duplex, remote: RemoteAddress, release: () => void, ticket: HandshakeTicket): boolean;
  /** Counts every refusal, also those the log holds back. */
  refusals: RefusalCounts;
  /** Refuses agents when descriptors run short; without it every agent is admitted. */
  descriptors?: DescriptorGauge | undefined;
  exhaustion?: DescriptorExhaustionLog;
  /** Why new agents are refused with 503 now, or undefined to admit them. */
  unavailable?: () => string | undefined;
  log: Logger;
}

export interface ClientListener {
  readonly port: number;
  /** Stops accepting new agents; open connections stay. */
  stopAccepting(): void;
  /** Closes every remaining socket and the listener. */
  close(): Promise<void>;
}

const UPGRADE_REQUIRED: RawError = {
  status: 426,
  code: ERROR_CODES.upgradeRequired,
  title: `This address is for svc agents: connect with a WebSocket using the subprotocol ${WS_SUBPROTOCOL}`,
  detail: 'the management API listens on [api] address',
  headers: { upgrade: 'websocket', connection: 'Upgrade' },
};

const BUSY: RawError = {
  status: 503,
  code: ERROR_CODES.serverBusy,
  title: 'Too many agents are connecting at once; retry later',
  headers: { 'retry-after': '5' },
};

/** Agents back off on a 503; a server out of descriptors stays full longer than a busy handshake queue. */
const OUT_OF_DESCRIPTORS: RawError = {
  status: 503,
  code: ERROR_CODES.serverBusy,
  title: 'svcd holds as many agents as its open-file limit allows; retry later',
  headers: { 'retry-after': '30' },
};

/** A cluster node cut off from its database takes no agents rather than hold clients it cannot record. */
const NO_DATABASE: RawError = {
  status: 503,
  code: ERROR_CODES.databaseUnavailable,
  title: 'This svcd node cannot reach its database; connect to another node or retry later',
  headers: { 'retry-after': '5' },
};

/**
 * The agent must ask for our subprotocol; another `svc-*` version is refused with a message saying so. A
 * malformed WebSocket upgrade (e.g. a bad Sec-WebSocket-Key) is answered in our error shape.
 */
function protocolProblem(req: IncomingMessage): RawError | undefined {
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket' || req.method !== 'GET')
    return UPGRADE_REQUIRED;
  const malformed = upgradeHeaderProblem(req.headers);
  if (malformed)
    return { status: 400, code: ERROR_CODES.malformedHttp, title: `Invalid WebSocket upgrade: ${malformed}` };
  const offered = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (offered.includes(WS_SUBPROTOCOL)) return undefined;
  const other = offered.find((p) => p.startsWith('svc-'));
  return {
    status: 400,
    code: ERROR_CODES.agentProtocol,
    title:
      other === undefined
        ? `Request the WebSocket subprotocol ${WS_SUBPROTOCOL}`
        : `Unsupported agent protocol ${other}; this server speaks ${WS_SUBPROTOCOL}`,
    detail: other === undefined ? '' : 'use an agent of the same release as svcd',
  };
}

/**
 * Error handler for upgraded sockets. Module-level on purpose: a closure in the upgrade handler would keep the
 * request, its headers and the head buffer alive for as long as the agent stays connected (~2.5 KiB per agent).
 */
function destroySocket(this: Duplex): void {
  this.destroy();
}

/**
 * Connections the kernel completes before svcd accepts them (capped by net.core.somaxconn). Node's 511 overflowed
 * when thousands of agents of a failed node arrived at once: each dropped connection waits a second or more for
 * the kernel's retry.
 */
const AGENT_LISTEN_BACKLOG = 4096;

/** Listens on `[server] address`: WebSocket upgrades for agents, admitted through the handshake limiter. */
export async function startClientListener(options: ClientListenerOptions): Promise<ClientListener> {
  const { limiter, log, upgradeTimeoutMs } = options;
  const refusals = new RefusalLog(log, options.refusals);
  const refuse = (socket: Duplex, ip: string | undefined, error: RawError) => {
    refusals.refused(ip, error);
    answerOnSocket(socket, error);
  };
  /** Open agent connections, cut by close(). */
  const streams = new Set<WebSocketStream>();
  const server: Server = createListenerServer(
    // The whole upgrade request (and the TLS handshake before it) must arrive within the timeout; upgraded
    // connections are no longer timed.
    {
      headerTimeoutMs: upgradeTimeoutMs,
      requestTimeoutMs: upgradeTimeoutMs,
      idleTimeoutMs: upgradeTimeoutMs,
      maxConnections: options.maxConnections,
    },
    options.tls,
    (req, res) => {
      refusals.refused(req.socket.remoteAddress, UPGRADE_REQUIRED);
      sendError(res, UPGRADE_REQUIRED);
    },
  );
  const timeoutHint = {
    timeoutDetail: `send the WebSocket upgrade request within ${formatDuration(upgradeTimeoutMs)} ([server] upgrade_timeout)`,
  };
  server.on('clientError', (err: ClientError, socket: Duplex & { remoteAddress?: string }) => {
    const answered = answerClientError(err, socket, timeoutHint);
    if (answered) refusals.refused(socket.remoteAddress, rawErrorOf(answered));
  });
  // E.g. an agent configured with http:// on this TLS port, or one that does not trust the certificate.
  server.on('tlsClientError', (err: Error & { code?: string }, socket: { remoteAddress?: string }) => {
    log.debug({ ip: socket.remoteAddress, cause: err.code ?? err.message }, 'agent TLS handshake failed');
  });
  capConnections(server, options.maxConnections, () => refusals.overCap(options.maxConnections));
  // Without a listener Node resets a CONNECT request; it gets the same answer as any other plain request.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', destroySocket);
    refuse(socket, req.socket.remoteAddress, UPGRADE_REQUIRED);
  });
  const { descriptors } = options;
  if (descriptors) {
    server.on('connection', (socket: Socket) => {
      descriptors.track(socket);
      if (descriptors.admitsConnection()) return;
      refusals.outOfDescriptors();
      socket.destroy();
    });
  }

  const admit = (
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
    release: () => void,
    ticket: HandshakeTicket,
  ) => {
    const stream = acceptUpgrade(
      socket,
      { headers: req.headers, head },
      { protocol: WS_SUBPROTOCOL, maxMessageBytes: options.maxPayloadBytes },
    );
    stream.on('error', (err) => log.debug({ err }, 'agent websocket error'));
    streams.add(stream);
    stream.once('close', () => streams.delete(stream));
    const remote = { ip: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 };
    if (options.onAgent(stream, remote, release, ticket)) return;
    ticket.end(false);
    stream.destroy();
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', destroySocket);
    const problem = protocolProblem(req);
    if (problem) {
      refuse(socket, req.socket.remoteAddress, problem);
      return;
    }
    const unavailable = options.unavailable?.();
    if (unavailable !== undefined) {
      refuse(socket, req.socket.remoteAddress, { ...NO_DATABASE, detail: unavailable });
      return;
    }
    if (descriptors && !descriptors.admitsAgent()) {
      const use = descriptors.use();
      const detail = use
        ? `${use.used} of ${use.limit} file descriptors in use; the last ${descriptors.reserve} are kept for the API, the database and tunnels`
        : '';
      refuse(socket, req.socket.remoteAddress, { ...OUT_OF_DESCRIPTORS, detail });
      return;
    }
    const abort = new AbortController();
    const onEarlyClose = () => abort.abort();
    socket.once('close', onEarlyClose);
    let ticket: HandshakeTicket | undefined;
    // An agent that says it takes word that it still waits gets a 102 now and then, each restarting its deadline.
    const stillWaiting =
      req.headers[AGENT_WAIT_HEADER] === '1'
        ? (ahead: number) =>
            socket.write(`HTTP/1.1 102 Processing\r\n${AGENT_AHEAD_HEADER}: ${ahead}\r\n\r\n`)
        : undefined;
    options.admission
      .acquire(abort.signal, stillWaiting)
      .then((admitted) => {
        ticket = admitted;
        return limiter.acquire(abort.signal, addressKey(req.socket.remoteAddress));
      })
      .then(
        (release) => {
          socket.off('close', onEarlyClose);
          if (!ticket || socket.destroyed) {
            ticket?.end(false);
            return release();
          }
          socket.once('close', release);
          admit(req, socket as Socket, head, release, ticket);
        },
        (err: unknown) => {
          socket.off('close', onEarlyClose);
          ticket?.end(false);
          if (err instanceof AdmissionAborted) return;
          if (err instanceof AdmissionRefused) {
            const retryAfter = String(err.retryAfterS);
            const headers = { 'retry-after': retryAfter };
            refuse(socket, req.socket.remoteAddress, { ...BUSY, detail: err.message, headers });
            return;
          }
          const reason = err instanceof Error && 'reason' in err ? err.reason : 'error';
          if (reason === 'aborted') return;
          refuse(socket, req.socket.remoteAddress, { ...BUSY, detail: `handshake queue: ${String(reason)}` });
        },
      );
  });

  const { host, port } = splitHostPort(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: AGENT_LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  keepAccepting(server, 'agent listener', options.exhaustion ?? new DescriptorExhaustionLog(log), log);

  let serverClosed: Promise<void> | undefined;
  const stopAccepting = () => {
    options.admission.close();
    limiter.close();
    serverClosed ??= new Promise((resolve) => server.close(() => resolve()));
  };
  return {
    port: (server.address() as AddressInfo).port,
    stopAccepting,
    async close() {
      stopAccepting();
      for (const stream of streams) stream.destroy();
      server.closeAllConnections();
      await serverClosed;
    },
  };
}
