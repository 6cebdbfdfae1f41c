import type { JobRun, JobRunReply } from '@svc/protocol';
import type { TunnelAgent } from './tunnels/ports.js';

/**
 * The one way core reaches an agent: "run this job on client X", "open this tunnel on client X". The gateway
 * implements it for the connections this process holds (gateway/local-dispatch.ts); a multi-node svcd will add an
 * implementation that forwards each call to the node holding the client's connection.
 */
export interface AgentDispatch {
  /** Asks the client's agent to start the job; rejects with DispatchError (core/jobs/ports.ts). */
  runJob(clientId: string, job: JobRun): Promise<JobRunReply>;
  /** The tunnel operations of the client's agent; undefined while the client is not connected. */
  tunnels(clientId: string): TunnelAgent | undefined;
}
