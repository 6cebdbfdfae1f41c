import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on loopback to a real server (a database): `cut()` drops every relayed connection and stops
 * listening, as if the server went away; `restore()` listens again on the same port.
 */
export interface TcpRelay {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const listen = async (port: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
      track(client);
      track(upstream);
      // One side gone (a killed process resets its socket): the other goes too, as a direct connection would.
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    return server;
  };
  let server: Server | undefined = await listen(0);
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    cut: () =>
      new Promise<void>((resolve) => {
        const closing = server;
        server = undefined;
        if (!closing) return resolve();
        closing.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
    restore: async () => {
      server ??= await listen(port);
    },
  };
}
