/**
 * One command on one or more clients over `/api/v1/ws/commands`: the request goes out as the socket's first
 * message; output chunks and then one final job record per client come back; the server closes when done.
 */
export interface CommandChunk {
  jid: string;
  client_id: string;
  result: { stdout: string; stderr: string };
}

export interface CommandFinal extends CommandChunk {
  status: string;
  exit_code: number | null;
  error: string;
}

export interface CommandEvents {
  onChunk(chunk: CommandChunk): void;
  onFinal(job: CommandFinal): void;
  onError(title: string, detail: string): void;
  onClose(): void;
}

export interface CommandRequest {
  command: string;
  client_ids: string[];
  timeout_sec: number;
  cwd?: string;
}

/** ws:// or wss:// of this page's own origin (the console is served by svcd, so that is the API). */
export const commandSocketUrl = (location: { protocol: string; host: string }, token: string): string =>
  `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/v1/ws/commands?access_token=${encodeURIComponent(token)}`;

/** `/api/v1/ws/commands/{jid}`: follows a run or job already running (no request message is sent). */
export const followSocketUrl = (
  location: { protocol: string; host: string },
  jid: string,
  token: string,
): string =>
  `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/v1/ws/commands/${encodeURIComponent(jid)}?access_token=${encodeURIComponent(token)}`;

type Message = Partial<CommandFinal> & { errors?: { title?: string; detail?: string }[] };

/** Sorts one socket message into the events; a final record is the one that carries a status. */
export function dispatchCommandMessage(text: string, events: CommandEvents): void {
  let message: Message;
  try {
    message = JSON.parse(text) as Message;
  } catch {
    events.onError('Unreadable message from svcd', text.slice(0, 200));
    return;
  }
  const first = message.errors?.[0];
  if (first) events.onError(first.title ?? 'The command failed', first.detail ?? '');
  else if (typeof message.status === 'string') events.onFinal(message as CommandFinal);
  else events.onChunk(message as CommandChunk);
}

export function runCommand(url: string, request: CommandRequest, events: CommandEvents): () => void {
  const socket = new WebSocket(url);
  socket.addEventListener('open', () => socket.send(JSON.stringify(request)));
  socket.addEventListener('message', (event) => {
    if (typeof event.data === 'string') dispatchCommandMessage(event.data, events);
  });
  socket.addEventListener('error', () => events.onError('The live connection to svcd failed', ''));
  socket.addEventListener('close', () => events.onClose());
  return () => socket.close();
}

/** Follows a run or job started elsewhere; `onClose` says whether svcd ended it normally (everything sent). */
export function followRun(
  url: string,
  events: Omit<CommandEvents, 'onClose'> & { onClose(complete: boolean): void },
): () => void {
  const socket = new WebSocket(url);
  let failed = false;
  socket.addEventListener('message', (event) => {
    if (typeof event.data === 'string')
      dispatchCommandMessage(event.data, {
        ...events,
        onError: (title, detail) => {
          failed = true;
          events.onError(title, detail);
        },
        onClose: () => undefined,
      });
  });
  socket.addEventListener('error', () => (failed = true));
  socket.addEventListener('close', (event) => events.onClose(!failed && event.code === 1000));
  return () => socket.close();
}
