import { ERROR_CODES } from '@svc/protocol';
import type { Logger } from '@svc/platform';
import { LogThrottle } from '../core/log-throttle.js';
import type { RawError } from '../http/raw-reply.js';
import { reasonOfCode, type RefusalCounts } from './refusal-counts.js';

const INTERVAL_MS = 60_000;
/** Addresses remembered at once (~100 bytes each); beyond, the one remembered longest is forgotten. */
const MAX_ADDRESSES = 10_000;
/**
 * Refusals of something that is trying to be an agent: an agent of another kind or version, or one turned away
 * by a full handshake queue. The rest (plain HTTP, a slow or broken request) is mostly probes and scanners: info.
 */
const AGENT_REFUSALS = new Set<string>([ERROR_CODES.agentProtocol, ERROR_CODES.serverBusy]);

/**
 * Logs refused agent connections (wrong subprotocol, not a WebSocket, too slow, queue full...) with the address
 * and the reason, at most once per address and minute: an agent of another kind retrying every few seconds is
 * reported, not repeated. Each line counts the refusals of that address held back since the line before.
 */
export class RefusalLog {
  private readonly perAddress = new LogThrottle(INTERVAL_MS, MAX_ADDRESSES);
  private readonly overCapThrottle = new LogThrottle(INTERVAL_MS, 1);
  private readonly descriptorThrottle = new LogThrottle(INTERVAL_MS, 1);

  constructor(
    private readonly log: Logger,
    private readonly counts: RefusalCounts,
  ) {}

  refused(ip: string | undefined, error: RawError): void {
    this.counts.add(reasonOfCode(error.code));
    const address = ip ?? 'unknown';
    const heldBack = this.perAddress.admit(address);
    if (heldBack === undefined) return;
    const level = AGENT_REFUSALS.has(error.code) ? 'warn' : 'info';
    this.log[level](
      {
        ip: address,
        status: error.status,
        code: error.code,
        reason: error.detail ? `${error.title} (${error.detail})` : error.title,
        refused_before: heldBack,
      },
      'agent connection refused',
    );
  }

  /** A connection closed unread because `[server] max_connections` are open. */
  overCap(maxConnections: number): void {
    this.counts.add('max_connections');
    const heldBack = this.overCapThrottle.admit('cap');
    if (heldBack === undefined) return;
    this.log.warn(
      { max_connections: maxConnections, refused_before: heldBack },
      'agent connection refused: [server] max_connections are open',
    );
  }

  /** A connection closed unread because the descriptors left are the reserve for the API, database and tunnels. */
  outOfDescriptors(): void {
    this.counts.add('out_of_descriptors');
    const heldBack = this.descriptorThrottle.admit('descriptors');
    if (heldBack === undefined) return;
    this.log.warn(
      { refused_before: heldBack },
      'agent connection closed unread: svcd is near its open-file limit (the rest is kept for the API)',
    );
  }
}
