import type { JobRun, JobRunReply } from '@svc/protocol';
import type { ClientRegistry } from '../core/clients/client-registry.js';
import type { AgentDispatch } from '../core/dispatch.js';
import { DispatchError } from '../core/jobs/ports.js';
import type { TunnelAgent } from '../core/tunnels/ports.js';

/** AgentDispatch for the agents connected to this process: finds the client's live connection in the registry. */
export class LocalDispatch implements AgentDispatch {
  constructor(private readonly registry: ClientRegistry) {}

  runJob(clientId: string, job: JobRun): Promise<JobRunReply> {
    const jobs = this.registry.connection(clientId)?.jobs;
    if (!jobs) return Promise.reject(new DispatchError('offline', 'the client is not connected'));
    return jobs.run(job);
  }

  tunnels(clientId: string): TunnelAgent | undefined {
    return this.registry.connection(clientId)?.tunnels;
  }
}
