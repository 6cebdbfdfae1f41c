import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A tiny TCP load balancer on 127.0.0.1 for tests: each connection goes to the first target port that accepts
 * it, so once a node is gone its agents land on the next one.
 */
export interface TcpBalancer {
  port: number;
  close(): Promise<void>;
}

function dial(ports: readonly number[], index = 0): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const port = ports[index];
    if (port === undefined) {
      reject(new Error('no target accepted the connection'));
      return;
    }
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', () => {
      socket.destroy();
      dial(ports, index + 1).then(resolve, reject);
    });
  });
}

export async function startTcpBalancer(targets: () => readonly number[]): Promise<TcpBalancer> {
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    inbound.on('error', () => inbound.destroy());
    inbound.pause();
    dial(targets()).then(
      (outbound) => {
        if (inbound.destroyed) {
          outbound.destroy();
          inbound.destroy();
          return;
        }
        for (const socket of [inbound, outbound]) {
          open.add(socket);
          socket.once('close', () => open.delete(socket));
        }
        outbound.on('error', () => outbound.destroy());
        inbound.once('close', () => outbound.destroy());
        outbound.once('close', () => inbound.destroy());
        inbound.pipe(outbound);
        outbound.pipe(inbound);
        inbound.resume();
      },
      () => inbound.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
