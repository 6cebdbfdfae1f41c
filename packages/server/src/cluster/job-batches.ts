import type { JobRun } from '@svc/protocol';
import type { AgentDispatch, BatchJob } from '../core/dispatch.js';
import { DispatchError } from '../core/jobs/ports.js';
import { toWireError, type DispatchReply } from './dispatch-wire.js';

/** Jobs one `runJobs` message carries at most. */
export const MAX_JOBS_PER_MESSAGE = 500;
/** NATS's max_payload when the server did not say (its default, 1 MB). */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** Bytes of a message kept for what surrounds the batch: the op name, the brackets, the reply's headers. */
const ENVELOPE_BYTES = 1024;

/** A batch as it travels: the run once, then each job as [client id, jid]. */
export interface JobBatch {
  run: Omit<JobRun, 'jid'>;
  jobs: [clientId: string, jid: string][];
}

/** One message's share of a batch, with the positions of its jobs in the batch. */
export interface BatchPart {
  batch: JobBatch;
  at: number[];
}

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * Splits the jobs of one run for a node into messages of at most `maxJobs` jobs whose encoded size stays within
 * `maxPayload` (NATS refuses a bigger message). A run too big for any message still goes with one job per message:
 * NATS's refusal then fails those jobs with its reason.
 */
export function splitJobBatch(
  run: Omit<JobRun, 'jid'>,
  jobs: readonly BatchJob[],
  maxPayload: number,
  maxJobs = MAX_JOBS_PER_MESSAGE,
): BatchPart[] {
  const room = maxPayload - ENVELOPE_BYTES - byteLength(run);
  const parts: BatchPart[] = [];
  let current: BatchPart | undefined;
  let used = 0;
  jobs.forEach((job, i) => {
    const pair: [string, string] = [job.clientId, job.jid];
    // The pair and the comma before it.
    const size = byteLength(pair) + 1;
    if (!current || current.at.length >= maxJobs || used + size > room) {
      current = { batch: { run, jobs: [] }, at: [] };
      parts.push(current);
      used = 0;
    }
    current.batch.jobs.push(pair);
    current.at.push(i);
    used += size;
  });
  return parts;
}

/** The encoded size of a part as it is sent (for tests and logs). */
export const encodedPartBytes = (part: BatchPart): number =>
  byteLength({ op: 'runJobs', args: [part.batch] });

/**
 * Starts the jobs of a batch another node sent, each through this node's connection to its client, and answers
 * for each one; a client still silent after `withinMs` (a little less than the sender waits) is answered as
 * failed, so one slow agent does not fail the others.
 */
export function answerBatch(
  local: Pick<AgentDispatch, 'runJob'>,
  batch: JobBatch,
  withinMs: number,
): Promise<DispatchReply[]> {
  return Promise.all(
    batch.jobs.map(async ([clientId, jid]): Promise<DispatchReply> => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new DispatchError('failed', `the client did not answer job.run within ${withinMs} ms`)),
          withinMs,
        );
      });
      try {
        const value = await Promise.race([local.runJob(clientId, { ...batch.run, jid }), late]);
        return { ok: true, value };
      } catch (err) {
        return { ok: false, error: toWireError(err) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}
