/**
 * Another node process's heap through its inspector (`--inspect=host:port`, DevTools protocol): a full garbage
 * collection, so that its RSS can be read without the garbage of recent work, and the size of its live heap.
 */
import { once } from 'node:events';
import { WebSocket } from 'ws';

interface InspectorTarget {
  webSocketDebuggerUrl?: string;
}

interface Reply {
  id?: number;
  result?: unknown;
  error?: { message: string };
}

/** Sends one DevTools protocol command to the process listening on `host:port` and resolves with its result. */
async function inspectorCall(host: string, port: number, method: string): Promise<unknown> {
  const targets = (await (await fetch(`http://${host}:${port}/json/list`)).json()) as InspectorTarget[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on ${host}:${port}`);
  const ws = new WebSocket(url);
  try {
    await once(ws, 'open');
    const reply = new Promise<unknown>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const message = JSON.parse(data.toString('utf8')) as Reply;
        if (message.id !== 1) return;
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result);
      });
      ws.once('close', () => reject(new Error('the inspector closed the connection')));
    });
    ws.send(JSON.stringify({ id: 1, method }));
    return await reply;
  } finally {
    ws.close();
  }
}

/** A full garbage collection (HeapProfiler.collectGarbage); resolves once it has finished. */
export async function collectGarbage(host: string, port: number): Promise<void> {
  await inspectorCall(host, port, 'HeapProfiler.collectGarbage');
}

/** Bytes of the JS heap in use (Runtime.getHeapUsage): right after collectGarbage, the live objects. */
export async function heapUsedBytes(host: string, port: number): Promise<number> {
  const result = (await inspectorCall(host, port, 'Runtime.getHeapUsage')) as { usedSize?: unknown };
  if (typeof result.usedSize !== 'number') throw new Error('Runtime.getHeapUsage: no usedSize');
  return result.usedSize;
}
