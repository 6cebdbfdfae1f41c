/**
 * A full garbage collection in another node process through its inspector (`--inspect=host:port`), so that its
 * RSS can be read without the garbage of recent work: HeapProfiler.collectGarbage over the DevTools protocol.
 */
import { once } from 'node:events';
import { WebSocket } from 'ws';

interface InspectorTarget {
  webSocketDebuggerUrl?: string;
}

/** Runs `HeapProfiler.collectGarbage` in the process listening on `host:port`; resolves once it has finished. */
export async function collectGarbage(host: string, port: number): Promise<void> {
  const targets = (await (await fetch(`http://${host}:${port}/json/list`)).json()) as InspectorTarget[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on ${host}:${port}`);
  const ws = new WebSocket(url);
  try {
    await once(ws, 'open');
    const done = new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const reply = JSON.parse(data.toString('utf8')) as { id?: number; error?: { message: string } };
        if (reply.id !== 1) return;
        if (reply.error) reject(new Error(`HeapProfiler.collectGarbage: ${reply.error.message}`));
        else resolve();
      });
      ws.once('close', () => reject(new Error('the inspector closed the connection')));
    });
    ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    await done;
  } finally {
    ws.close();
  }
}
