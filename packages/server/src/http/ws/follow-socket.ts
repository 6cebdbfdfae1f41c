import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { AppError, type ErrorBody, type Job } from '@svc/protocol';
import type { OutputStream } from '../../core/jobs/job-watch.js';
import type { ChildRef } from '../../core/jobs/multi-job-runner.js';
import type { MultiJobsService, RunScope } from '../../core/jobs/multi-jobs-service.js';
import type { FollowObserver, RunFollow } from '../../core/jobs/run-follow.js';
import { toAppError } from '../errors.js';
import {
  CLOSE,
  finalMessage,
  MAX_BUFFERED_BYTES,
  outputChunkMessage,
  PEER_CLOSE_WAIT_MS,
  type SocketEnding,
} from './job-socket.js';

interface Log {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/**
 * One /ws/commands/{jid} (or /ws/scripts/{jid}) session: follows a run or a job started elsewhere (by POST, a
 * schedule, another socket) with the messages of /ws/commands: output chunks as they arrive and one final job
 * record per client (those already finished at once), then closes. It takes no request message.
 */
export class FollowSocketSession implements FollowObserver {
  private readonly follow: RunFollow;
  private closed = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly socket: Duplex,
    private readonly ending: SocketEnding,
    jid: string,
    multi: MultiJobsService,
    private readonly log: Log,
    scope?: RunScope,
  ) {
    this.follow = multi.follow(this, undefined, scope);
    ws.on('error', (err) => log.debug({ err }, 'follow socket error'));
    ws.once('close', () => this.end());
    this.follow.start(jid).catch((err: unknown) => {
      const appError = toAppError(err);
      if (!(err instanceof AppError)) log.warn({ err, jid }, 'following a run failed');
      this.fail(appError);
    });
  }

  chunk(child: ChildRef, stream: OutputStream, text: string): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ jid: child.jid }, 'follow socket closed: the reader does not keep up with the output');
      this.close(CLOSE.tooSlow, 'reader too slow');
      return;
    }
    this.ws.send(outputChunkMessage(child, stream, text));
  }

  final(job: Job): void {
    if (this.closed) return;
    this.ws.send(finalMessage(job));
  }

  done(): void {
    this.close(CLOSE.done, 'done');
  }

  private fail(err: AppError): void {
    if (this.closed) return;
    this.ws.send(JSON.stringify({ errors: err.toItems() } satisfies ErrorBody));
    this.close(CLOSE.policy, err.message.slice(0, 100));
  }

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
    this.follow.stop();
  }
}
