import type { JobRun, JobRunReply, TunnelOverview } from '@svc/protocol';
import type { ClientTunnel } from './clients/client-record.js';
import type { TunnelRequest } from './tunnels/tunnel-request.js';

/** A tunnel to open: what was asked, by whom, and the host name the creator reached the API by (tunnel_url). */
export interface TunnelOpening {
  request: TunnelRequest;
  /** Username of the creator. */
  owner: string;
  apiHost: string;
}

/** One job of a batch: its client and jid; the batch's jobs share everything else of their JobRun. */
export interface BatchJob {
  clientId: string;
  jid: string;
}

/** A tunnel as the node hosting it sees it (GET /tunnels), before the client's name is added. */
export type HostedTunnel = Omit<TunnelOverview, 'client_name'>;

/**
 * The one way core reaches an agent, in whole commands: "run this job on client X", "open this tunnel on client
 * X", "disconnect the clients of this credential". Core never holds a connection. The gateway implements it for
 * the connections this process holds (gateway/local-dispatch.ts); a cluster adds an implementation that sends
 * each command to the node holding the client's connection.
 */
export interface AgentDispatch {
  /**
   * Throws an AppError when a command for the client cannot be sent now for a reason other than the client
   * being offline (a cluster node cut off from the others: 503); called before a command is stored.
   */
  ensureReachable?(clientId: string): void;
  /** Asks the client's agent to start the job; rejects with DispatchError (core/jobs/ports.ts). */
  runJob(clientId: string, job: JobRun): Promise<JobRunReply>;
  /**
   * Asks the agents of many clients to start one job each, all of the same run (a step of a multi-client run).
   * Returns at once one promise per job, in order, each settling as runJob's would. A cluster sends one request
   * per node holding some of the clients instead of one per job; without this method core calls runJob per job.
   */
  runJobs?(run: Omit<JobRun, 'jid'>, jobs: readonly BatchJob[]): Promise<JobRunReply>[];
  /**
   * Asks the client's agent to kill a running job's process group (it then reports `cancelled`); resolves false
   * when the agent has no running process for it. Rejects with DispatchError: `offline`, or `unsupported` for
   * an agent too old to cancel.
   */
  cancelJob(clientId: string, jid: string): Promise<boolean>;
  /**
   * Opens a tunnel through the client's agent, listening on the node that holds the client, and stores its
   * definition; rejects with the tunnel errors (core/tunnels/tunnel-errors.ts), e.g. not connected.
   */
  openTunnel(clientId: string, opening: TunnelOpening): Promise<ClientTunnel>;
  /** Deletes a tunnel, open or only stored (its client away); rejects with the tunnel errors (404, busy). */
  closeTunnel(clientId: string, tunnelId: string, force: boolean): Promise<void>;
  /** Every tunnel of every connected client, from each node that holds clients. */
  hostedTunnels(): Promise<HostedTunnel[]>;
  /** Closes the client's connection, whichever node holds it; false when none does. */
  disconnect(clientId: string, reason: string): Promise<boolean>;
  /** Closes every connection that logged in with this client credential; resolves with how many there were. */
  disconnectByCredential(clientAuthId: string, reason: string): Promise<number>;
}
