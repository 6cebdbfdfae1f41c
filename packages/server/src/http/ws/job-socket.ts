import type { RunRequester } from '../../core/jobs/run-env.js';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { z } from 'zod';
import {
  AppError,
  ERROR_CODES,
  wsCommandRequestSchema,
  wsScriptRequestSchema,
  type ErrorBody,
  type Job,
  type JobOutputChunkMessage,
} from '@svc/protocol';
import type { OutputStream } from '../../core/jobs/job-watch.js';
import type { ChildRef, MultiJobObserver } from '../../core/jobs/multi-job-runner.js';
import type { MultiJobsService, RunLink, StartedMultiJob } from '../../core/jobs/multi-jobs-service.js';
import { parseBody } from '../body.js';
import { toAppError } from '../errors.js';

export type JobSocketKind = 'commands' | 'scripts';

/** How long the socket waits for its one request message. */
const REQUEST_WAIT_MS = 30_000;
/** Output queued for a reader that does not keep up; past it the socket is closed (memory stays bounded). */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** Closed after this long past the job's timeout even when some client never answered. */
const FINAL_GRACE_MS = 60_000;

export const CLOSE = { done: 1000, policy: 1008, tooSlow: 1013 } as const;

/** A chunk of a child's live output, as /ws/commands sends it (and the follow socket). */
export function outputChunkMessage(child: ChildRef, stream: OutputStream, text: string): string {
  const message: JobOutputChunkMessage = {
    jid: child.jid,
    client_id: child.client_id,
    client_name: child.client_name,
    result: {
      stdout: stream === 'stdout' ? text : '',
      stderr: stream === 'stderr' ? text : '',
      summary: '',
    },
  };
  return JSON.stringify(message);
}

/** A child's final record: its whole output was sent as chunks or is in it, the summary is left out. */
export const finalMessage = (job: Job): string =>
  JSON.stringify({ ...job, result: { ...job.result, summary: '' } });
/** How long svcd waits, once it has said it is done, for the client's close before cutting the connection. */
export const PEER_CLOSE_WAIT_MS = 5_000;

/**
 * How a session ends once everything is sent. A browser (it sends Origin, RFC 6455 4.1) gets svcd's close frame
 * and answers it. A command-line client such as OpenRPort's rportcli reads until the connection ends and only then
 * sends its own close frame; had svcd sent one first, its WebSocket library would already have answered it, and
 * the client's own close would fail ("failed to write close message"). So such a client gets what rportd does: the
 * end of the stream without a close frame, and its close frame is still read.
 */
export type SocketEnding = 'close-frame' | 'end-of-stream';

interface Log {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/**
 * One /ws/commands or /ws/scripts session (notes 6.4): takes one request shaped like the POST body, runs it as a
 * multi-client job and sends every output chunk as it arrives and one final job record per client, then closes.
 */
export class JobSocketSession implements MultiJobObserver {
  private started: StartedMultiJob | undefined;
  private finals = 0;
  private closed = false;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly socket: Duplex,
    private readonly ending: SocketEnding,
    private readonly kind: JobSocketKind,
    /** The caller: its name is the run's created_by, its groups apply to the run's vault references. */
    private readonly user: RunRequester,
    private readonly multi: MultiJobsService,
    private readonly log: Log,
    /** The caller's access check of the run (issue 28). */
    private readonly link: Omit<RunLink, 'requester'> = {},
  ) {
    const waiting = setTimeout(
      () => this.fail(new AppError('invalid', ERROR_CODES.requestTimeout, 'No request message received')),
      REQUEST_WAIT_MS,
    );
    ws.once('message', (data, isBinary) => {
      clearTimeout(waiting);
      void this.begin(isBinary || !Buffer.isBuffer(data) ? undefined : data.toString('utf8'));
    });
    ws.on('error', (err) => log.debug({ err }, 'job socket error'));
    ws.once('close', (code) => {
      clearTimeout(waiting);
      log.debug({ code, after_done: this.closed }, 'job socket closed');
      this.end();
    });
  }

  chunk(child: ChildRef, stream: OutputStream, text: string): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ jid: child.jid }, 'job socket closed: the reader does not keep up with the output');
      this.close(CLOSE.tooSlow, 'reader too slow');
      return;
    }
    this.ws.send(outputChunkMessage(child, stream, text));
  }

  final(child: Job): void {
    if (this.closed) return;
    this.finals += 1;
    this.ws.send(finalMessage(child));
    this.closeWhenDone();
  }

  private async begin(text: string | undefined): Promise<void> {
    try {
      const request = parseRequest(text);
      const body = parseBody(
        this.kind === 'commands' ? wsCommandRequestSchema : wsScriptRequestSchema,
        request,
      );
      const { username } = this.user;
      const link: RunLink = { ...this.link, requester: this.user };
      const started =
        this.kind === 'commands'
          ? await this.multi.runCommand(body as z.output<typeof wsCommandRequestSchema>, username, this, link)
          : await this.multi.runScript(body as z.output<typeof wsScriptRequestSchema>, username, this, link);
      this.started = started;
      if (this.closed) return void started.detach();
      this.deadline = setTimeout(
        () => this.close(CLOSE.done, 'gave up waiting for results'),
        body.timeout_sec * 1000 * (body.execute_concurrently ? 1 : started.targets) + FINAL_GRACE_MS,
      );
      this.closeWhenDone();
    } catch (err) {
      if (!(err instanceof AppError)) this.log.warn({ err }, 'job socket request failed');
      this.fail(toAppError(err));
    }
  }

  private closeWhenDone(): void {
    if (this.started && this.finals >= this.started.targets) this.close(CLOSE.done, 'done');
  }

  private fail(err: AppError): void {
    if (this.closed) return;
    this.ws.send(JSON.stringify({ errors: err.toItems() } satisfies ErrorBody));
    this.close(CLOSE.policy, err.message.slice(0, 100));
  }

  /** Says it is done (see SocketEnding) and gives the client PEER_CLOSE_WAIT_MS to close its side. */
  private close(code: number, reason: string): void {
    if (this.closed) return;
    if (this.ending === 'close-frame') this.ws.close(code, reason);
    else this.socket.end();
    const cutOff = setTimeout(() => this.ws.terminate(), PEER_CLOSE_WAIT_MS);
    this.ws.once('close', () => clearTimeout(cutOff));
    this.end();
  }

  private end(): void {
    this.closed = true;
    clearTimeout(this.deadline);
    this.started?.detach();
  }
}

function parseRequest(text: string | undefined): unknown {
  const invalid = new AppError(
    'invalid',
    ERROR_CODES.invalidJson,
    'Invalid JSON data',
    'send one text message holding a JSON object shaped like the POST /commands or /scripts body',
  );
  if (text === undefined) throw invalid;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid;
    return value;
  } catch {
    throw invalid;
  }
}
