/** Why a new connection was not admitted. */
export type ShareRefusal = 'address_share' | 'full';

export interface ShareLimits {
  /** Open connections at most; 0 = no limit. */
  maxConnections: number;
  /** Open connections per address (see `addressKey`) at most; 0 = no share. */
  perAddress: number;
}

export interface Admission {
  refused?: ShareRefusal;
  /** The address whose oldest connection was closed to make room. */
  evictedFrom?: string;
}

/**
 * Shares a listener's connections between the addresses they come from, so that one address (a slowloris, a
 * runaway script) cannot take the slots everybody else needs. Each address holds at most `perAddress`; when all
 * `maxConnections` are open, the address holding the most gives up its oldest connection to a newcomer that holds
 * fewer, and only when no address holds more than the newcomer would is the newcomer refused.
 */
export class ConnectionShares<C extends { destroy(): void }> {
  private readonly byAddress = new Map<string, Set<C>>();
  private total = 0;

  constructor(private readonly limits: ShareLimits) {}

  get open(): number {
    return this.total;
  }

  admit(connection: C, key: string): Admission {
    const mine = this.byAddress.get(key);
    const held = mine?.size ?? 0;
    if (this.limits.perAddress > 0 && held >= this.limits.perAddress) return { refused: 'address_share' };
    let evictedFrom: string | undefined;
    if (this.limits.maxConnections > 0 && this.total >= this.limits.maxConnections) {
      evictedFrom = this.evictFromHeaviest(held + 1);
      if (evictedFrom === undefined) return { refused: 'full' };
    }
    if (mine) mine.add(connection);
    else this.byAddress.set(key, new Set([connection]));
    this.total += 1;
    return evictedFrom === undefined ? {} : { evictedFrom };
  }

  /** Forgets a closed connection; a second call for the same one does nothing. */
  release(connection: C, key: string): void {
    const mine = this.byAddress.get(key);
    if (!mine?.delete(connection)) return;
    this.total -= 1;
    if (mine.size === 0) this.byAddress.delete(key);
  }

  /** Closes the oldest connection of the address holding the most, if it holds more than `newcomerWouldHold`. */
  private evictFromHeaviest(newcomerWouldHold: number): string | undefined {
    let heaviest: [string, Set<C>] | undefined;
    for (const entry of this.byAddress) if (!heaviest || entry[1].size > heaviest[1].size) heaviest = entry;
    if (!heaviest || heaviest[1].size <= newcomerWouldHold) return undefined;
    const [key, connections] = heaviest;
    const oldest = connections.values().next().value as C;
    this.release(oldest, key);
    oldest.destroy();
    return key;
  }
}
