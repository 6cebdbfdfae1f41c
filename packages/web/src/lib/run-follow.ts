/**
 * A run's rows while its page follows it live: the messages of the follow socket (output chunks, final records)
 * merged into the children read over REST. Messages are applied in batches, so a run on 1,000 clients costs one
 * render per batch rather than one per message.
 */
import type { CommandChunk, CommandFinal } from './command-socket.js';
import type { ChildJob } from './run-jobs.js';

export type LiveMessage = { chunk: CommandChunk & { client_name?: string } } | { final: CommandFinal };

/** Live output kept per row until its final record arrives (that one carries the whole output). */
export const MAX_LIVE_OUTPUT = 64 * 1024;

const OPEN = new Set(['running', 'queued']);

const append = (text: string, more: string) =>
  text.length >= MAX_LIVE_OUTPUT ? text : (text + more).slice(0, MAX_LIVE_OUTPUT);

/** The live rows after a batch of messages: a new Map when anything changed, else `live` itself. */
export function applyLiveMessages(
  live: ReadonlyMap<string, ChildJob>,
  batch: readonly LiveMessage[],
): ReadonlyMap<string, ChildJob> {
  if (batch.length === 0) return live;
  const next = new Map(live);
  for (const message of batch) {
    if ('final' in message) {
      const job = message.final as CommandFinal & Partial<ChildJob>;
      next.set(job.jid, {
        client_name: '',
        started_at: null,
        finished_at: null,
        ...job,
        result: { stdout: job.result.stdout, stderr: job.result.stderr },
      });
      continue;
    }
    const { chunk } = message;
    const row = next.get(chunk.jid);
    if (row && !OPEN.has(row.status)) continue;
    next.set(chunk.jid, {
      jid: chunk.jid,
      client_id: chunk.client_id,
      client_name: chunk.client_name ?? row?.client_name ?? '',
      status: 'running',
      exit_code: null,
      started_at: row?.started_at ?? null,
      finished_at: null,
      error: '',
      result: {
        stdout: append(row?.result.stdout ?? '', chunk.result.stdout),
        stderr: append(row?.result.stderr ?? '', chunk.result.stderr),
      },
    });
  }
  return next;
}

/**
 * The rows shown: those read over REST, each replaced by its live row unless REST already has it finished (a
 * stored end wins), then the live rows REST has not listed yet (the run reached them since), in arrival order.
 */
export function mergeLive(base: readonly ChildJob[], live: ReadonlyMap<string, ChildJob>): ChildJob[] {
  if (live.size === 0) return [...base];
  const listed = new Set<string>();
  const rows = base.map((job) => {
    listed.add(job.jid);
    const row = live.get(job.jid);
    if (!row || !OPEN.has(job.status)) return job;
    return {
      ...job,
      ...row,
      started_at: row.started_at ?? job.started_at,
      client_name: row.client_name || job.client_name,
    };
  });
  for (const [jid, row] of live) if (!listed.has(jid)) rows.push(row);
  return rows;
}
