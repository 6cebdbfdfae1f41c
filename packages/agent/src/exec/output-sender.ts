import type { Client, ClientChannel } from 'ssh2';
import { encodeJobData, encodeJobEnd, encodeJobHeader } from '@svc/platform';
import { JOB_OUTPUT_ACK, JOB_OUTPUT_SUBSYSTEM } from '@svc/protocol';
import type { JobOutput } from './job-output.js';

const ACK = Buffer.from(JOB_OUTPUT_ACK, 'utf8');

export type SendOutcome = 'stored' | 'not stored';

function openOutputChannel(ssh: Client): Promise<ClientChannel> {
  return new Promise((resolve, reject) =>
    ssh.subsys(JOB_OUTPUT_SUBSYSTEM, (err, channel) => (err ? reject(err) : resolve(channel))),
  );
}

/**
 * Sends one job result to svcd on its own output channel: the header, every kept chunk (and, while the job runs,
 * each new one as it comes, waiting for the channel to drain when svcd reads slower), the end frame, then waits
 * for svcd's ACK. `stored` only after the ACK; `not stored` when the channel could not be opened or closed first,
 * in which case the result is offered again after the next reconnect.
 */
export async function sendJobOutput(ssh: Client, output: JobOutput, replay: boolean): Promise<SendOutcome> {
  let channel: ClientChannel;
  try {
    channel = await openOutputChannel(ssh);
  } catch {
    return 'not stored';
  }
  let closed = false;
  let received = Buffer.alloc(0);
  /** Resolves the current wait; closing the channel ends every wait. */
  let wake: () => void = () => undefined;
  const waitFor = (arm: (done: () => void) => void) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      arm(resolve);
    });
  channel.on('data', (chunk: Buffer) => {
    if (received.length < ACK.length) received = Buffer.concat([received, chunk]).subarray(0, ACK.length);
    wake();
  });
  channel.on('error', () => undefined);
  channel.once('close', () => {
    closed = true;
    wake();
  });
  const acked = () => received.length === ACK.length && received.equals(ACK);

  const write = async (bytes: Buffer) => {
    if (!channel.write(bytes) && !closed) await waitFor((done) => channel.once('drain', done));
  };

  await write(encodeJobHeader({ jid: output.jid, replay }));
  let next = 0;
  while (!closed) {
    // Read before flushing: once the end is set no part follows it, so all parts are flushed below.
    const end = output.end;
    for (; next < output.parts.length && !closed; next++) {
      const part = output.parts[next];
      if (part) for (const frame of encodeJobData(part.stream, part.data)) await write(frame);
    }
    if (closed) break;
    if (end) {
      await write(encodeJobEnd(end));
      break;
    }
    // The job may have ended while the frames above were waiting for the channel: then go round again.
    if (next === output.parts.length && !output.end) await waitFor((done) => output.onceChanged(done));
  }
  while (!closed && received.length < ACK.length) await waitFor(() => undefined);
  const outcome: SendOutcome = acked() ? 'stored' : 'not stored';
  if (!closed) channel.close();
  return outcome;
}
