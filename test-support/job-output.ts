/**
 * A job's output as svc sends it, for agents the tests run in-process: the job output channel (header, data
 * frames, end record) on the agent's SSH connection.
 */
import { encodeJobData, encodeJobEnd, encodeJobHeader } from '../packages/platform/src/job-frames.js';
import { JOB_OUTPUT_SUBSYSTEM, type JobEnd } from '../packages/protocol/src/index.js';
import { openSubsystem, type TestAgent } from './agent-client.js';

/** A job's end record: exit 0, successful, now, nothing truncated, unless `overrides` say otherwise. */
export const jobEnd = (overrides: Partial<JobEnd> = {}): JobEnd => ({
  status: 'successful',
  exit_code: 0,
  finished_at: new Date().toISOString(),
  error: '',
  stdout_truncated: false,
  stderr_truncated: false,
  ...overrides,
});

/** Opens the output channel as svc does and writes the header; returns a writer for frames and the end. */
export async function openOutput(agent: Pick<TestAgent, 'ssh'>, jid: string) {
  const channel = await openSubsystem(agent.ssh, JOB_OUTPUT_SUBSYSTEM);
  const closed = new Promise<void>((resolve) => channel.once('close', () => resolve()));
  // svcd's acknowledgement must be read for the channel to close.
  channel.resume();
  channel.write(encodeJobHeader({ jid, replay: false }));
  return {
    write(stream: 'stdout' | 'stderr', data: Buffer) {
      for (const frame of encodeJobData(stream, data)) channel.write(frame);
    },
    async end(end: Partial<JobEnd> = {}) {
      channel.write(encodeJobEnd(jobEnd(end)));
      await closed;
    },
  };
}
