/**
 * Why agent connections were turned away, counted since start for monitoring: the error code of a refused upgrade
 * (`upgrade_required`, `agent_protocol`, `server_busy`, `malformed_http`, ...) or a later step's reason
 * (`max_connections`, `out_of_descriptors`, `handshake_timeout`, `login_failed`, `no_hello`, `already_connected`). A fixed set of keys.
 */
export class RefusalCounts {
  private readonly counts = new Map<string, number>();

  add(reason: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
  }

  snapshot(): ReadonlyMap<string, number> {
    return this.counts;
  }
}

/** `ERR_SERVER_BUSY` → `server_busy`. */
export const reasonOfCode = (code: string): string => code.replace(/^ERR_/, '').toLowerCase();
