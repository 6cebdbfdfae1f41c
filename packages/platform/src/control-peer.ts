import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type * as z from 'zod/mini';
import {
  CONTROL_ERRORS,
  CONTROL_MESSAGES,
  CONTROL_VERSION,
  MAX_CONTROL_MESSAGE_BYTES,
  controlEnvelopeSchema,
  controlErrorSchema,
  type ControlType,
} from '@svc/protocol';
import './zod-english.js';

type Message = (typeof CONTROL_MESSAGES)[ControlType];
export type PayloadOf<T extends ControlType> = z.output<(typeof CONTROL_MESSAGES)[T]['payload']>;
export type ReplyOf<T extends ControlType> = (typeof CONTROL_MESSAGES)[T]['reply'] extends z.core.$ZodType
  ? z.output<NonNullable<(typeof CONTROL_MESSAGES)[T]['reply']>>
  : never;
export type Handler<T extends ControlType> = (
  payload: PayloadOf<T>,
) => Promise<ReplyOf<T> | void> | ReplyOf<T> | void;

/** An `error` reply from the other end. */
export class ControlError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

const channelClosed = () => new Error('control channel closed');

export interface ControlPeerOptions {
  /** Which end this is; requests of types the other end may not send are refused. */
  side: 'agent' | 'server';
  requestTimeoutMs?: number;
  /** Called for protocol problems (bad JSON, oversized lines); the peer closes the stream after. */
  onProtocolError?: (problem: string) => void;
}

interface Pending {
  type: ControlType;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One end of the control channel: newline-delimited JSON over a duplex stream, requests matched to replies by
 * id, each request answered exactly once or failed by timeout, so one lost reply never stalls the rest.
 */
export class ControlPeer {
  private readonly pending = new Map<string, Pending>();
  private readonly handlers = new Map<string, (payload: unknown) => Promise<unknown>>();
  private buffer = '';
  private closed = false;
  private readonly timeoutMs: number;

  constructor(
    private readonly stream: Duplex,
    private readonly options: ControlPeerOptions,
  ) {
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => this.receive(chunk));
    stream.on('close', () => this.shutdown(channelClosed));
    stream.on('error', (err: Error) => this.shutdown(() => err));
  }

  /** Registers the handler for requests and notifications of one type sent by the other end. */
  on<T extends ControlType>(type: T, handler: Handler<T>): this {
    const spec: Message = CONTROL_MESSAGES[type];
    this.handlers.set(type, async (raw) => {
      const payload = spec.payload.safeParse(raw);
      if (!payload.success) {
        throw new ControlError(
          CONTROL_ERRORS.invalidPayload,
          `invalid ${type} payload: ${payload.error.message}`,
        );
      }
      return handler(payload.data as PayloadOf<T>);
    });
    return this;
  }

  request<T extends ControlType>(
    type: T,
    payload: PayloadOf<T>,
    timeoutMs = this.timeoutMs,
  ): Promise<ReplyOf<T>> {
    if (this.closed) return Promise.reject(new Error('control channel closed'));
    const id = randomUUID();
    return new Promise<ReplyOf<T>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${type} got no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { type, resolve: resolve as (v: unknown) => void, reject, timer });
      this.send({ v: CONTROL_VERSION, type, id, payload });
    });
  }

  notify<T extends ControlType>(type: T, payload: PayloadOf<T>): void {
    if (!this.closed) this.send({ v: CONTROL_VERSION, type, payload });
  }

  close(): void {
    this.shutdown(channelClosed);
    this.stream.end();
  }

  /**
   * Fails what is pending, without writing: for a peer whose connection is already gone (ending the channel of a
   * closed SSH connection only makes ssh2 build an error when it ends it again; 10,000 of them at svcd's stop).
   */
  abandon(): void {
    this.shutdown(channelClosed);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private send(message: object): void {
    this.stream.write(JSON.stringify(message) + '\n');
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.dispatch(line);
    }
    if (this.buffer.length > MAX_CONTROL_MESSAGE_BYTES) this.protocolError('control message too large');
  }

  private dispatch(line: string): void {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      return this.protocolError('control message is not JSON');
    }
    const envelope = controlEnvelopeSchema.safeParse(json);
    if (!envelope.success) return this.protocolError('control message has no valid envelope');
    const { type, id, payload } = envelope.data;
    if (type === 'reply' || type === 'error') return this.settle(id, type, payload);
    void this.handle(type, id, payload);
  }

  private settle(id: string | undefined, kind: 'reply' | 'error', payload: unknown): void {
    const pending = id === undefined ? undefined : this.pending.get(id);
    if (!pending || id === undefined) return; // a late reply after its timeout
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (kind === 'error') {
      const error = controlErrorSchema.safeParse(payload);
      const { code, message } = error.success
        ? error.data
        : { code: CONTROL_ERRORS.failed, message: 'request failed' };
      return pending.reject(new ControlError(code, message));
    }
    const schema = CONTROL_MESSAGES[pending.type].reply;
    const reply = schema ? schema.safeParse(payload) : undefined;
    if (reply && !reply.success) return pending.reject(new Error(`invalid ${pending.type} reply`));
    pending.resolve(reply?.data);
  }

  private async handle(type: string, id: string | undefined, payload: unknown): Promise<void> {
    const known = Object.hasOwn(CONTROL_MESSAGES, type) ? CONTROL_MESSAGES[type as ControlType] : undefined;
    const handler = this.handlers.get(type);
    const fromOtherSide = known && (known.from === 'both' || known.from !== this.options.side);
    if (!known || !handler || !fromOtherSide) {
      if (id !== undefined) this.replyError(id, CONTROL_ERRORS.unknownType, `unknown request type '${type}'`);
      return;
    }
    try {
      const result = await handler(payload);
      if (id !== undefined && !this.closed)
        this.send({ v: CONTROL_VERSION, type: 'reply', id, payload: result ?? {} });
    } catch (err) {
      if (id === undefined) return;
      const code = err instanceof ControlError ? err.code : CONTROL_ERRORS.failed;
      this.replyError(id, code, err instanceof Error ? err.message : String(err));
    }
  }

  private replyError(id: string, code: string, message: string): void {
    if (!this.closed) this.send({ v: CONTROL_VERSION, type: 'error', id, payload: { code, message } });
  }

  private protocolError(problem: string): void {
    this.options.onProtocolError?.(problem);
    this.close();
  }

  /** `reason` is called only when a request is pending: most channels close with none, and an Error is not free. */
  private shutdown(reason: () => Error): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pending.size === 0) return;
    const err = reason();
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(err);
    }
    this.pending.clear();
  }
}
