import { ControlError } from '@svc/platform';
import { CONTROL_ERRORS, MAX_INLINE_RESULT_BYTES, type JobResult } from '@svc/protocol';
import type { Client } from 'ssh2';
import type { JobOutput } from './job-output.js';
import { sendJobOutput, type SendOutcome } from './output-sender.js';

/** Sends a `job.result` request on the link's control channel; resolves when svcd replies (its ACK). */
export type ResultRequest = (result: JobResult) => Promise<unknown>;

/** How long a new job may take to end before its output goes on a channel, so that short jobs go in one request. */
export const INLINE_WAIT_MS = 50;

/** Whether the result is whole and small enough for one `job.result` request. */
export function fitsInline(output: JobOutput): boolean {
  return output.end !== undefined && output.bytes <= MAX_INLINE_RESULT_BYTES;
}

/**
 * Resolves once the result has ended, outgrown a request, or after `waitMs`: what is known then decides how it
 * is sent. A job still running after that streams on a channel, its live output held back at most `waitMs`.
 */
export function settledForOffer(output: JobOutput, waitMs = INLINE_WAIT_MS): Promise<void> {
  return new Promise((resolve) => {
    let decided = false;
    const done = () => {
      if (decided) return;
      decided = true;
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    const check = () => {
      if (decided) return;
      if (output.end || output.bytes > MAX_INLINE_RESULT_BYTES) done();
      else output.onceChanged(check);
    };
    check();
  });
}

/**
 * Sends a whole result (fitsInline) in one `job.result` request: `stored` once svcd has replied, `not stored`
 * on an error reply or a lost link (offered again after the next reconnect), `unsupported` when this svcd does
 * not know the request (the caller sends it on a channel instead).
 */
export async function sendJobResult(
  request: ResultRequest,
  output: JobOutput,
  replay: boolean,
): Promise<SendOutcome | 'unsupported'> {
  const end = output.end;
  if (!end) throw new Error(`job ${output.jid} has not ended`);
  try {
    await request({
      jid: output.jid,
      replay,
      stdout: output.head('stdout', MAX_INLINE_RESULT_BYTES).toString('base64'),
      stderr: output.head('stderr', MAX_INLINE_RESULT_BYTES).toString('base64'),
      end,
    });
    return 'stored';
  } catch (err) {
    if (err instanceof ControlError && err.code === CONTROL_ERRORS.unknownType) return 'unsupported';
    return 'not stored';
  }
}

/** A link as results see it; `request` is dropped once svcd has said it does not know `job.result`. */
export interface ResultLink {
  ssh: Client;
  request: ResultRequest | undefined;
}

/**
 * Offers a result to svcd on this link: in one `job.result` request when it has ended and is small, otherwise
 * (or when svcd does not know the request) streamed on its own output channel.
 */
export async function offerJobResult(
  link: ResultLink,
  output: JobOutput,
  replay: boolean,
): Promise<SendOutcome> {
  if (link.request && fitsInline(output)) {
    const outcome = await sendJobResult(link.request, output, replay);
    if (outcome !== 'unsupported') return outcome;
    link.request = undefined;
  }
  return sendJobOutput(link.ssh, output, replay);
}
