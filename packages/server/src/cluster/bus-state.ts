import { AppError, ERROR_CODES } from '@svc/protocol';
import { Events, type NatsConnection } from 'nats';
import type { ClientsLog } from '../core/clients/ports.js';

/** The 503 for a request that needs another node while NATS is away. */
export const busUnavailable = (clientId: string): AppError =>
  new AppError(
    'unavailable',
    ERROR_CODES.clusterBusUnavailable,
    `Client '${clientId}' is held by another node and NATS, which reaches it, is unavailable`,
    'this node serves only the clients it holds until its connection to NATS ([cluster] nats_url) is back; retry later',
  );

/**
 * Whether this node's connection to NATS is up. While it is down the node keeps serving its own agents, answers
 * requests for other nodes' clients with a 503, and reads no presence; it reconnects by itself.
 */
export class BusState {
  private up = true;
  private backAt = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: ClientsLog,
    private readonly onBack: () => void,
  ) {}

  watch(): void {
    void (async () => {
      for await (const status of this.nc.status()) {
        if (status.type === Events.Disconnect && this.up) {
          this.up = false;
          this.log.warn(
            { nats: status.data },
            'lost NATS: serving only the clients this node holds until it is back',
          );
        } else if (status.type === Events.Reconnect && !this.up) {
          this.up = true;
          this.backAt = Date.now();
          this.log.info({ nats: status.data }, 'NATS is back: the cluster routes and presence resume');
          this.onBack();
        }
      }
    })();
  }

  get available(): boolean {
    return this.up && !this.nc.isClosed();
  }

  /** Less than `ms` since NATS came back (other nodes may not have renewed their presence yet). */
  backWithin(ms: number): boolean {
    return Date.now() - this.backAt < ms;
  }
}
