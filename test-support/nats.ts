import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './process.js';

export interface TestNats {
  url: string;
  /** Stops the server for good and removes its store. */
  stop(): Promise<void>;
  /** Stops the server but keeps its store: NATS is down until `restart`. */
  halt(): Promise<void>;
  /** Starts it again on the same port with the same store. */
  restart(): Promise<void>;
}

const reachable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Another process took the free port before nats-server bound it (tests run side by side). */
const PORT_TAKEN = /address already in use/;

/**
 * A nats-server of its own with JetStream (Debian's package: `nats-server`), on a free port with a temporary
 * store; a port taken meanwhile is replaced by another (three tries). Throws (never skips) when the binary is
 * missing or the server does not come up.
 */
export async function startTestNats(): Promise<TestNats> {
  const store = await mkdtemp(join(tmpdir(), 'svc-nats-'));
  const started = await spawnOnFreePort(store).catch(async (err: unknown) => {
    await rm(store, { recursive: true, force: true });
    throw err;
  });
  const { port } = started;
  let { child } = started;
  const halt = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    halt,
    async restart() {
      await halt();
      child = await spawnNats(port, store);
    },
    async stop() {
      await halt();
      await rm(store, { recursive: true, force: true });
    },
  };
}

async function spawnOnFreePort(store: string): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { port, child: await spawnNats(port, store) };
    } catch (err) {
      if (attempt >= 3 || !PORT_TAKEN.test(String(err))) throw err;
    }
  }
}

async function spawnNats(port: number, store: string): Promise<ChildProcess> {
  const child: ChildProcess = spawn(
    'nats-server',
    ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) =>
      reject(
        new Error(
          `nats-server is required for the cluster tests (apt-get install nats-server): ${err.message}`,
        ),
      ),
    );
    child.once('exit', (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`)));
  });
  const up = (async () => {
    for (let i = 0; i < 100; i += 1) {
      if (await reachable(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`nats-server did not listen on ${port}: ${stderr}`);
  })();
  await Promise.race([up, failed]);
  failed.catch(() => undefined);
  return child;
}
