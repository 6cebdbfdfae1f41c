import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AppError, ERROR_CODES } from '@svc/protocol';
import { LogThrottle } from '../core/log-throttle.js';
import { addressKey } from './address-key.js';
import { ConnectionShares, type ShareRefusal } from './connection-shares.js';

const LOG_INTERVAL_MS = 60_000;
/** Addresses whose refusals are logged separately; beyond it the longest-quiet is forgotten. */
const LOGGED_ADDRESSES = 1024;

const REFUSAL_LOG: Record<ShareRefusal, string> = {
  full: 'API connection refused: [api] max_connections are open',
  address_share: 'API connection refused: this address holds [api] max_connections_per_address',
};

/**
 * `[api] max_connections` and `max_connections_per_address`, checked as each connection is accepted (see
 * ConnectionShares); a refused connection is closed before anything is read from it. Refusals are logged at most
 * once a minute per reason and address, with how many were held back.
 */
export function shareConnections(app: FastifyInstance, maxConnections: number, perAddress: number): void {
  if (maxConnections <= 0 && perAddress <= 0) return;
  const shares = new ConnectionShares<Socket>({ maxConnections, perAddress });
  const throttle = new LogThrottle(LOG_INTERVAL_MS, LOGGED_ADDRESSES);
  const logOnce = (reason: string, ip: string, message: string) => {
    const heldBack = throttle.admit(`${reason} ${ip}`);
    if (heldBack === undefined) return;
    app.log.warn(
      {
        ip,
        max_connections: maxConnections,
        max_connections_per_address: perAddress,
        refused_before: heldBack,
      },
      message,
    );
  };
  app.server.on('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    const { refused, evictedFrom } = shares.admit(socket, key);
    if (refused) {
      socket.destroy();
      logOnce(refused, key, REFUSAL_LOG[refused]);
      return;
    }
    if (evictedFrom !== undefined)
      logOnce('evicted', evictedFrom, 'API connection closed to make room: this address held the most');
    socket.once('close', () => shares.release(socket, key));
  });
}

/** Requests per address at once: half its connection share, so that slow handlers (bcrypt, database) serve more addresses than one. */
export const requestShareOf = (connectionsPerAddress: number): number =>
  connectionsPerAddress > 0 ? Math.max(1, Math.floor(connectionsPerAddress / 2)) : 0;

/**
 * At most `perAddress` requests from one address are being received or answered at once; more get 429 and their
 * connection is closed (their body is not read). Keeps one address from tying up the handlers (bcrypt, database)
 * that everybody's requests need.
 */
export function shareRequests(app: FastifyInstance, perAddress: number): void {
  if (perAddress <= 0) return;
  const inFlight = new Map<string, number>();
  app.addHook('onRequest', (request, reply, done) => {
    const key = addressKey(request.socket.remoteAddress);
    const count = inFlight.get(key) ?? 0;
    if (count >= perAddress) {
      done(
        new AppError(
          'throttled',
          ERROR_CODES.tooManyRequests,
          'Too many requests from this address at once',
          `wait for answers before sending more: ${perAddress} requests at a time per address ` +
            '(half of [api] max_connections_per_address)',
        ),
      );
      return;
    }
    inFlight.set(key, count + 1);
    // 'close' comes once the response is sent or the connection is gone, whichever is first.
    reply.raw.once('close', () => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left > 0) inFlight.set(key, left);
      else inFlight.delete(key);
    });
    done();
  });
}
