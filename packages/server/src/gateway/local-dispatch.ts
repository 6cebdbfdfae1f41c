import type { JobRun, JobRunReply } from '@svc/protocol';
import type { ClientTunnel } from '../core/clients/client-record.js';
import type { AgentDispatch, HostedTunnel, TunnelOpening } from '../core/dispatch.js';
import { DispatchError } from '../core/jobs/ports.js';
import type { LiveConnections } from './live-connections.js';
import type { TunnelHost } from './tunnel-host.js';

/** AgentDispatch for the agents connected to this process: their live connections and this node's tunnels. */
export class LocalDispatch implements AgentDispatch {
  constructor(
    private readonly connections: LiveConnections,
    private readonly tunnels: TunnelHost,
  ) {}

  runJob(clientId: string, job: JobRun): Promise<JobRunReply> {
    const jobs = this.connections.get(clientId)?.jobs;
    if (!jobs) return Promise.reject(new DispatchError('offline', 'the client is not connected'));
    return jobs.run(job);
  }

  cancelJob(clientId: string, jid: string): Promise<boolean> {
    const jobs = this.connections.get(clientId)?.jobs;
    if (!jobs) return Promise.reject(new DispatchError('offline', 'the client is not connected'));
    return jobs.cancel(jid);
  }

  openTunnel(clientId: string, opening: TunnelOpening): Promise<ClientTunnel> {
    return this.tunnels.open(clientId, opening.request, opening.owner, opening.apiHost);
  }

  closeTunnel(clientId: string, tunnelId: string, force: boolean): Promise<void> {
    return this.tunnels.delete(clientId, tunnelId, force);
  }

  hostedTunnels(): Promise<HostedTunnel[]> {
    return Promise.resolve(this.tunnels.hosted());
  }

  disconnect(clientId: string, reason: string): Promise<boolean> {
    return this.connections.disconnect(clientId, reason);
  }

  disconnectByCredential(clientAuthId: string, reason: string): Promise<number> {
    return this.connections.disconnectByCredential(clientAuthId, reason);
  }
}
