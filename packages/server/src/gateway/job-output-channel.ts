import type { ServerChannel } from 'ssh2';
import { JOB_OUTPUT_ACK, type JobEnd } from '@svc/protocol';
import { JobOutputDecoder, JobOutputFormatError, StreamRedactor, type Logger } from '@svc/platform';
import { StringDecoder } from 'node:string_decoder';
import type { JobOutputListener, OutputStream } from '../core/jobs/job-watch.js';
import type { JobResultSink } from '../core/jobs/ports.js';
import type { JobRedactions } from './job-redactions.js';

/** Output svcd keeps per stream whatever the agent sends: 4× the agents' default send_back_limit. */
export const MAX_STORED_OUTPUT_BYTES = 16 * 1024 * 1024;

/** One stream's bytes up to the cap. */
class CappedOutput {
  private readonly parts: Buffer[] = [];
  private bytes = 0;
  capped = false;

  append(data: Buffer): void {
    const room = MAX_STORED_OUTPUT_BYTES - this.bytes;
    if (data.length > room) this.capped = true;
    const kept = data.length > room ? data.subarray(0, room) : data;
    if (kept.length === 0) return;
    // A copy: the received chunk may be much larger than the part kept.
    this.parts.push(Buffer.from(kept));
    this.bytes += kept.length;
  }

  take(): Buffer {
    return Buffer.concat(this.parts, this.bytes);
  }
}

/**
 * Passes output on as text while it arrives, when someone watches the job. One decoder per stream keeps a
 * multi-byte character whose bytes are split across chunks whole.
 */
class LiveText {
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };

  constructor(
    private readonly clientId: string,
    private readonly live: JobOutputListener | undefined,
  ) {}

  pass(jid: string, stream: OutputStream, data: Buffer): void {
    if (!this.live?.wants(jid)) return;
    const text = this.decoders[stream].write(data);
    if (text !== '') this.live.chunk(this.clientId, jid, stream, text);
  }

  flush(jid: string): void {
    if (!this.live?.wants(jid)) return;
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.decoders[stream].end();
      if (rest !== '') this.live.chunk(this.clientId, jid, stream, rest);
    }
  }
}

/**
 * Reads one job output channel of a client (protocol in @svc/protocol jobs.ts): collects stdout and stderr,
 * stores the result through the sink when the end frame arrives, then acknowledges and closes. A channel that
 * breaks the format is closed without an ack, so the agent offers the result again.
 */
export function readJobOutput(
  channel: ServerChannel,
  clientId: string,
  sink: JobResultSink,
  log: Pick<Logger, 'warn' | 'debug'>,
  live?: JobOutputListener,
  redactions?: JobRedactions,
): void {
  const decoder = new JobOutputDecoder();
  const text = new LiveText(clientId, live);
  const stdout = new CappedOutput();
  const stderr = new CappedOutput();
  let jid = '';
  /** Set at the header when the job has secrets: each stream passes through one before it is kept or shown. */
  let redactors: { stdout: StreamRedactor; stderr: StreamRedactor } | undefined;
  const take = (stream: OutputStream, data: Buffer) => {
    const safe = redactors ? redactors[stream].push(data) : data;
    (stream === 'stdout' ? stdout : stderr).append(safe);
    text.pass(jid, stream, safe);
  };

  const finish = async (end: JobEnd) => {
    try {
      const stored = await sink.store(clientId, jid, {
        end,
        stdout: stdout.take(),
        stderr: stderr.take(),
        stdoutCapped: stdout.capped,
        stderrCapped: stderr.capped,
      });
      if (!stored) log.debug({ client_id: clientId, jid }, 'job result not stored: no such running job');
      redactions?.forget(jid);
      // Acknowledged either way: a result svcd will never store should not be offered again.
      channel.end(JOB_OUTPUT_ACK);
    } catch (err) {
      log.warn(
        { err, client_id: clientId, jid },
        'storing a job result failed; the agent will offer it again',
      );
      channel.close();
    }
  };

  channel.on('data', (chunk: Buffer) => {
    let parts;
    try {
      parts = decoder.push(chunk);
    } catch (err) {
      if (!(err instanceof JobOutputFormatError)) throw err;
      log.warn({ client_id: clientId, jid, problem: err.message }, 'job output channel refused');
      channel.close();
      return;
    }
    for (const part of parts) {
      switch (part.kind) {
        case 'header': {
          jid = part.header.jid;
          const secrets = redactions?.secretsOf(jid) ?? [];
          redactors =
            secrets.length === 0
              ? undefined
              : { stdout: new StreamRedactor(secrets), stderr: new StreamRedactor(secrets) };
          break;
        }
        case 'stdout':
        case 'stderr':
          take(part.kind, part.data);
          break;
        case 'end':
          if (redactors)
            for (const stream of ['stdout', 'stderr'] as const) take(stream, redactors[stream].end());
          text.flush(jid);
          void finish(part.end);
      }
    }
  });
  channel.on('error', (err: Error) =>
    log.debug({ err, client_id: clientId, jid }, 'job output channel error'),
  );
}
