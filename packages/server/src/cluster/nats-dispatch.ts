import { AppError, ERROR_CODES, type JobRun, type JobRunReply } from '@svc/protocol';
import { ErrorCode, type NatsConnection, type NatsError, type Subscription } from 'nats';
import type { ClientOwner } from '../core/clients/client-events.js';
import type { ClientTunnel } from '../core/clients/client-record.js';
import type { ClientsLog } from '../core/clients/ports.js';
import type { AgentDispatch, BatchJob, HostedTunnel, TunnelOpening } from '../core/dispatch.js';
import { DispatchError } from '../core/jobs/ports.js';
import { tunnelErrors } from '../core/tunnels/tunnel-errors.js';
import type { LiveConnections } from '../gateway/live-connections.js';
import { busUnavailable } from './bus-state.js';
import {
  decodeJson,
  encodeJson,
  fromWireError,
  toWireError,
  type DispatchReply,
  type DispatchRequest,
} from './dispatch-wire.js';
import { answerBatch, DEFAULT_MAX_PAYLOAD, splitJobBatch, type JobBatch } from './job-batches.js';

export interface NatsDispatchSettings {
  nodeId: string;
  /** Subject prefix (`[cluster] nats_prefix`). */
  prefix: string;
  /** How long a node may take to answer a command. */
  timeoutMs: number;
  /** Whether NATS is reachable now; while it is not, other nodes' clients answer 503 at once. */
  busAvailable: () => boolean;
}

/** Who holds a client, and which nodes are live. */
export interface ClusterPresence {
  owner(clientId: string): Promise<ClientOwner | undefined>;
  liveNodeIds(): Promise<ReadonlySet<string>>;
}

const isNatsError = (err: unknown, code: string): boolean => (err as NatsError | undefined)?.code === code;

const notConnected = (): DispatchError => new DispatchError('offline', 'the client is not connected');

/** Time a node keeps for sending its answer to a batch: its clients that are slower are answered as failed. */
const BATCH_ANSWER_MARGIN_MS = 2_000;

/** A job's answer to come, settled from outside. */
interface PendingReply {
  promise: Promise<JobRunReply>;
  resolve: (reply: JobRunReply) => void;
  reject: (err: unknown) => void;
}

function pendingReply(): PendingReply {
  let resolve: (reply: JobRunReply) => void = () => undefined;
  let reject: (err: unknown) => void = () => undefined;
  const promise = new Promise<JobRunReply>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/**
 * AgentDispatch of a cluster node: a client this node holds is reached through the local dispatch; another
 * node's client by a NATS request to `<prefix>.node.<owner>.dispatch`, which that node runs through its own
 * local dispatch. "No responders" (the owner is gone) answers at once as not connected.
 */
export class NatsDispatch implements AgentDispatch {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly local: AgentDispatch,
    private readonly connections: LiveConnections,
    private readonly presence: ClusterPresence,
    private readonly settings: NatsDispatchSettings,
    private readonly log: ClientsLog,
  ) {}

  /** Answers the commands other nodes send for the clients this node holds. */
  serve(): void {
    const subscription = this.nc.subscribe(this.subject(this.settings.nodeId));
    this.subscription = subscription;
    void (async () => {
      for await (const message of subscription) {
        void this.execute(decodeJson<DispatchRequest>(message.data)).then((reply) => {
          message.respond(encodeJson(reply));
        });
      }
    })();
  }

  close(): void {
    this.subscription?.unsubscribe();
  }

  /** Before a single command is stored: a client of another node while NATS is away answers 503. */
  ensureReachable(clientId: string): void {
    if (!this.connections.get(clientId) && !this.settings.busAvailable()) throw busUnavailable(clientId);
  }

  async runJob(clientId: string, job: JobRun): Promise<JobRunReply> {
    if (this.connections.get(clientId)) return this.local.runJob(clientId, job);
    if (!this.settings.busAvailable()) throw new DispatchError('failed', busUnavailable(clientId).message);
    const owner = await this.remoteOwner(clientId);
    if (!owner) throw notConnected();
    return (await this.send(owner, { op: 'runJob', args: [clientId, job] }, notConnected)) as JobRunReply;
  }

  /**
   * The jobs of this node's clients go straight to their connections; the others are grouped by the node holding
   * their client and sent as one `runJobs` request per node (split past MAX_JOBS_PER_MESSAGE jobs or NATS's
   * max_payload), whose answer carries one reply per job.
   */
  runJobs(run: Omit<JobRun, 'jid'>, jobs: readonly BatchJob[]): Promise<JobRunReply>[] {
    const replies = jobs.map(() => pendingReply());
    this.routeJobs(run, jobs, replies).catch((err: unknown) => {
      for (const reply of replies) reply.reject(err);
    });
    return replies.map((reply) => reply.promise);
  }

  private async routeJobs(
    run: Omit<JobRun, 'jid'>,
    jobs: readonly BatchJob[],
    replies: PendingReply[],
  ): Promise<void> {
    const byNode = new Map<string, number[]>();
    await Promise.all(
      jobs.map(async ({ clientId, jid }, i) => {
        const reply = replies[i] as PendingReply;
        if (this.connections.get(clientId)) {
          this.local.runJob(clientId, { ...run, jid }).then(reply.resolve, reply.reject);
          return;
        }
        if (!this.settings.busAvailable()) {
          reply.reject(new DispatchError('failed', busUnavailable(clientId).message));
          return;
        }
        let owner: ClientOwner | undefined;
        try {
          owner = await this.remoteOwner(clientId);
        } catch (err) {
          reply.reject(err);
          return;
        }
        if (!owner) {
          reply.reject(notConnected());
          return;
        }
        const at = byNode.get(owner.nodeId) ?? [];
        at.push(i);
        byNode.set(owner.nodeId, at);
      }),
    );
    await Promise.all(
      [...byNode].map(([nodeId, at]) =>
        this.sendJobs(
          nodeId,
          run,
          at.map((i) => jobs[i] as BatchJob),
          at.map((i) => replies[i] as PendingReply),
        ),
      ),
    );
  }

  /** One node's share of a batch, in as few messages as its size allows. */
  private async sendJobs(
    nodeId: string,
    run: Omit<JobRun, 'jid'>,
    jobs: BatchJob[],
    replies: PendingReply[],
  ): Promise<void> {
    const maxPayload = this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    await Promise.all(
      splitJobBatch(run, jobs, maxPayload).map(async (part) => {
        try {
          const answers = (await this.send(
            { nodeId, epoch: 0 },
            { op: 'runJobs', args: [part.batch] },
            notConnected,
          )) as DispatchReply[];
          part.at.forEach((i, k) => {
            const reply = replies[i] as PendingReply;
            const answer = answers[k];
            if (!answer)
              reply.reject(new DispatchError('failed', `node '${nodeId}' left this job unanswered`));
            else if (answer.ok) reply.resolve(answer.value as JobRunReply);
            else reply.reject(fromWireError(answer.error, nodeId));
          });
        } catch (err) {
          for (const i of part.at) replies[i]?.reject(err);
        }
      }),
    );
  }

  async cancelJob(clientId: string, jid: string): Promise<boolean> {
    if (this.connections.get(clientId)) return this.local.cancelJob(clientId, jid);
    this.requireBus(clientId);
    const owner = await this.remoteOwner(clientId);
    if (!owner) throw notConnected();
    return (await this.send(owner, { op: 'cancelJob', args: [clientId, jid] }, notConnected)) as boolean;
  }

  async openTunnel(clientId: string, opening: TunnelOpening): Promise<ClientTunnel> {
    if (this.connections.get(clientId)) return this.local.openTunnel(clientId, opening);
    this.requireBus(clientId);
    const owner = await this.remoteOwner(clientId);
    const offline = () => tunnelErrors.notConnected(clientId);
    if (!owner) throw offline();
    return (await this.send(owner, { op: 'openTunnel', args: [clientId, opening] }, offline)) as ClientTunnel;
  }

  async closeTunnel(clientId: string, tunnelId: string, force: boolean): Promise<void> {
    if (!this.connections.get(clientId)) this.requireBus(clientId);
    const owner = this.connections.get(clientId) ? undefined : await this.remoteOwner(clientId);
    if (!owner) return this.local.closeTunnel(clientId, tunnelId, force);
    await this.send(owner, { op: 'closeTunnel', args: [clientId, tunnelId, force] }, () =>
      tunnelErrors.notConnected(clientId),
    );
  }

  async hostedTunnels(): Promise<HostedTunnel[]> {
    const others = await this.fanOut({ op: 'hostedTunnels', args: [] });
    return [...(await this.local.hostedTunnels()), ...others.flatMap((value) => value as HostedTunnel[])];
  }

  async disconnect(clientId: string, reason: string): Promise<boolean> {
    if (this.connections.get(clientId)) return this.local.disconnect(clientId, reason);
    this.requireBus(clientId);
    const owner = await this.remoteOwner(clientId);
    if (!owner) return false;
    return (await this.send(owner, { op: 'disconnect', args: [clientId, reason] }, () => false)) as boolean;
  }

  async disconnectByCredential(clientAuthId: string, reason: string): Promise<number> {
    const here = await this.local.disconnectByCredential(clientAuthId, reason);
    const others = await this.fanOut({ op: 'disconnectByCredential', args: [clientAuthId, reason] });
    return others.reduce<number>((sum, value) => sum + Number(value), here);
  }

  /** Runs a command another node sent, for a client this node holds. */
  private async execute(request: DispatchRequest): Promise<DispatchReply> {
    try {
      const [a, b, c] = request.args;
      let value: unknown;
      switch (request.op) {
        case 'runJob':
          value = await this.local.runJob(String(a), b as JobRun);
          break;
        case 'runJobs':
          value = await answerBatch(
            this.local,
            a as JobBatch,
            Math.max(1, this.settings.timeoutMs - BATCH_ANSWER_MARGIN_MS),
          );
          break;
        case 'cancelJob':
          value = await this.local.cancelJob(String(a), String(b));
          break;
        case 'openTunnel':
          value = await this.local.openTunnel(String(a), b as TunnelOpening);
          break;
        case 'closeTunnel':
          value = await this.local.closeTunnel(String(a), String(b), c === true);
          break;
        case 'hostedTunnels':
          value = await this.local.hostedTunnels();
          break;
        case 'disconnect':
          value = await this.local.disconnect(String(a), String(b));
          break;
        case 'disconnectByCredential':
          value = await this.local.disconnectByCredential(String(a), String(b));
          break;
      }
      return { ok: true, value: value ?? null };
    } catch (err) {
      return { ok: false, error: toWireError(err) };
    }
  }

  private async remoteOwner(clientId: string): Promise<ClientOwner | undefined> {
    const owner = await this.presence.owner(clientId);
    return owner && owner.nodeId !== this.settings.nodeId ? owner : undefined;
  }

  private subject(nodeId: string): string {
    return `${this.settings.prefix}.node.${nodeId}.dispatch`;
  }

  private async send(
    owner: ClientOwner,
    request: DispatchRequest,
    whenGone: () => unknown,
  ): Promise<unknown> {
    let reply: DispatchReply;
    try {
      const message = await this.nc.request(this.subject(owner.nodeId), encodeJson(request), {
        timeout: this.settings.timeoutMs,
      });
      reply = decodeJson<DispatchReply>(message.data);
    } catch (err) {
      if (isNatsError(err, ErrorCode.NoResponders)) {
        const gone = whenGone();
        if (gone instanceof Error) throw gone;
        return gone;
      }
      if (isNatsError(err, ErrorCode.Timeout))
        throw new DispatchError(
          'failed',
          `node '${owner.nodeId}' did not answer within ${this.settings.timeoutMs} ms`,
        );
      throw new DispatchError('failed', `the cluster bus is unavailable: ${(err as Error).message}`);
    }
    if (!reply.ok) throw fromWireError(reply.error, owner.nodeId);
    return reply.value;
  }

  private requireBus(clientId: string): void {
    if (!this.settings.busAvailable()) throw busUnavailable(clientId);
  }

  /** The command on every other live node; nodes that do not answer are logged and left out. */
  private async fanOut(request: DispatchRequest): Promise<unknown[]> {
    if (!this.settings.busAvailable())
      throw new AppError(
        'unavailable',
        ERROR_CODES.clusterBusUnavailable,
        'NATS, which reaches the other nodes, is unavailable',
        'this node serves only the clients it holds until its connection to NATS ([cluster] nats_url) is back; retry later',
      );
    const nodes = [...(await this.presence.liveNodeIds())].filter((id) => id !== this.settings.nodeId);
    const replies = await Promise.allSettled(
      nodes.map((nodeId) => this.send({ nodeId, epoch: 0 }, request, () => undefined)),
    );
    const values: unknown[] = [];
    replies.forEach((reply, i) => {
      if (reply.status === 'fulfilled') {
        if (reply.value !== undefined) values.push(reply.value);
      } else
        this.log.warn({ err: reply.reason as unknown, node: nodes[i] }, `node did not answer ${request.op}`);
    });
    return values;
  }
}
