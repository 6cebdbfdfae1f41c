import type { Socket } from 'node:net';

export interface TunnelTrafficTotals {
  /** Tunnel connections accepted since start. */
  connections: number;
  /** Tunnel connections open now. */
  open: number;
  /** Bytes received from the users of tunnels and relayed towards the clients. */
  bytesToClients: number;
  /** Bytes relayed from the clients back to the users of tunnels. */
  bytesFromClients: number;
}

/**
 * Bytes through every tunnel of this node, without a cost per chunk: a socket's own byte counters are added up
 * when it closes, and those of the open sockets when the totals are read.
 */
export class TunnelTraffic {
  private readonly open = new Set<Socket>();
  private connections = 0;
  private closedIn = 0;
  private closedOut = 0;

  /** Counts an accepted tunnel connection until it closes. */
  track(socket: Socket): void {
    this.connections += 1;
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.closedIn += socket.bytesRead;
      this.closedOut += socket.bytesWritten;
    });
  }

  totals(): TunnelTrafficTotals {
    let bytesIn = this.closedIn;
    let bytesOut = this.closedOut;
    for (const socket of this.open) {
      bytesIn += socket.bytesRead;
      bytesOut += socket.bytesWritten;
    }
    return {
      connections: this.connections,
      open: this.open.size,
      bytesToClients: bytesIn,
      bytesFromClients: bytesOut,
    };
  }
}
