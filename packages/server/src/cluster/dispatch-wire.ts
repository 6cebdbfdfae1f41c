import { AppError, type ErrorItem } from '@svc/protocol';
import { DispatchError, type DispatchFailure } from '../core/jobs/ports.js';

/** A command one node sends another over NATS: an AgentDispatch method and its arguments, as JSON. */
export interface DispatchRequest {
  op:
    | 'runJob'
    | 'runJobs'
    | 'cancelJob'
    | 'openTunnel'
    | 'closeTunnel'
    | 'hostedTunnels'
    | 'disconnect'
    | 'disconnectByCredential';
  args: unknown[];
}

type WireError =
  | { type: 'dispatch'; reason: DispatchFailure; message: string }
  | { type: 'app'; kind: AppError['kind']; code: string; title: string; detail: string; extra: ErrorItem[] }
  | { type: 'other'; message: string };

export type DispatchReply = { ok: true; value: unknown } | { ok: false; error: WireError };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const encodeJson = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
export const decodeJson = <T>(data: Uint8Array): T => JSON.parse(decoder.decode(data)) as T;

/** An error of the executing node as it travels back: dispatch and API errors keep their kind and code. */
export function toWireError(err: unknown): WireError {
  if (err instanceof DispatchError) return { type: 'dispatch', reason: err.reason, message: err.message };
  if (err instanceof AppError)
    return {
      type: 'app',
      kind: err.kind,
      code: err.code,
      title: err.message,
      detail: err.detail,
      extra: err.extra,
    };
  return { type: 'other', message: err instanceof Error ? err.message : String(err) };
}

/** The error again on the requesting node. */
export function fromWireError(error: WireError, nodeId: string): Error {
  switch (error.type) {
    case 'dispatch':
      return new DispatchError(error.reason, error.message);
    case 'app':
      return new AppError(error.kind, error.code, error.title, error.detail, error.extra);
    default:
      return new Error(`node '${nodeId}': ${error.message}`);
  }
}
