import { connect } from 'node:net';

export interface PortCheck {
  open: boolean;
  error?: string;
}

/** Tries a TCP connection to host:port and closes it at once; reports why it failed. */
export function checkPort(host: string, port: number, timeoutMs: number): Promise<PortCheck> {
  return new Promise((resolve) => {
    const socket = connect({ host: host.replace(/^\[(.*)\]$/, '$1'), port });
    const finish = (result: PortCheck) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ open: false, error: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
    socket.once('connect', () => finish({ open: true }));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      finish({ open: false, error: err.code ? `${err.code}: ${err.message}` : err.message }),
    );
  });
}
