import { generateKeyPairSync } from 'node:crypto';
/**
 * A small svcd stand-in for the agent's job tests, with the real transport: WebSocket (svc-v1) → ssh2 server →
 * the control channel (ControlPeer, answering hello and ping) and job output channels, which it reads with the
 * shared JobOutputDecoder and acknowledges as svcd does, unless a test tells it otherwise. `job.result` requests
 * are answered only with `resultRequests` set (as an svcd that knows them); otherwise `unknown_type`, as before.
 */
import { once } from 'node:events';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Connection, ServerChannel } from 'ssh2';
import {
  acceptUpgrade,
  ControlError,
  ControlPeer,
  JobOutputDecoder,
  type JobOutputPart,
  type WebSocketStream,
} from '@svc/platform';
import { ssh2 } from '@svc/platform/ssh2';
import {
  CONTROL_ERRORS,
  CONTROL_SUBSYSTEM,
  JOB_OUTPUT_ACK,
  JOB_OUTPUT_SUBSYSTEM,
  WS_SUBPROTOCOL,
  type Hello,
  type JobEnd,
  type JobOutputHeader,
  type JobResult,
  type JobRun,
  type JobRunReply,
} from '@svc/protocol';

/** One output channel as svcd saw it. */
export interface ReceivedOutput {
  header: JobOutputHeader | undefined;
  stdout: Buffer[];
  stderr: Buffer[];
  end: JobEnd | undefined;
  acked: boolean;
  /** The channel closed (after the ack, or without one). */
  closed: boolean;
  formatError: string | undefined;
}

/** What to do when an output channel has delivered its end frame. */
export type EndPolicy = 'ack' | 'close without ack' | 'drop the connection';

interface AgentLink {
  ssh: Connection;
  peer: ControlPeer | undefined;
  helloDone: boolean;
}

const CREDENTIALS = { id: 'jobs-agent', password: 'jobs-secret-1' };

export class JobSvcd {
  readonly credentials = CREDENTIALS;
  /** Every output channel opened by any agent, in order. */
  readonly outputs: ReceivedOutput[] = [];
  /** Decides per finished channel; default: acknowledge. */
  onEnd: (output: ReceivedOutput) => EndPolicy = () => 'ack';
  /** Whether `job.result` requests are known; each one received, in order. */
  resultRequests = false;
  readonly results: JobResult[] = [];
  /** Every hello received, in order. */
  readonly hellos: Hello[] = [];
  /** Decides per `job.result` request: acknowledge (reply), or answer an error (offer it again later). */
  onResult: (result: JobResult) => 'ack' | 'error' = () => 'ack';
  private readonly links = new Set<AgentLink>();
  // ECDSA P-256 as svcd uses: ssh2's own ed25519 generator makes an unparsable key about 1 time in 256
  // (mscdex/ssh2#1513).
  private readonly hostKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'sec1', format: 'pem' })
    .toString();
  private http: HttpServer | undefined;
  private readonly streams = new Set<WebSocketStream>();
  private port = 0;

  get url(): string {
    return `ws://127.0.0.1:${this.port}/`;
  }

  /** Agents that have said hello and are still connected. */
  get connectedAgents(): number {
    return [...this.links].filter((link) => link.helloDone).length;
  }

  /** Listens on 127.0.0.1: a new port the first time, the same one after stop(). */
  async start(): Promise<void> {
    const http = createServer();
    const sshServer = new ssh2.Server({ hostKeys: [this.hostKey] }, (ssh) => this.accept(ssh));
    http.on('upgrade', (req, socket: Socket, head: Buffer) => {
      const stream = acceptUpgrade(
        socket,
        { headers: req.headers, head },
        { protocol: WS_SUBPROTOCOL, maxMessageBytes: 0 },
      );
      stream.on('error', () => undefined);
      this.streams.add(stream);
      stream.once('close', () => this.streams.delete(stream));
      Object.assign(stream, { remoteAddress: '127.0.0.1', remotePort: 1 });
      sshServer.injectSocket(stream as unknown as Socket);
    });
    http.listen(this.port, '127.0.0.1');
    await once(http, 'listening');
    this.port = (http.address() as AddressInfo).port;
    this.http = http;
  }

  /** Cuts every agent connection and stops listening, as a crashed svcd would. */
  async stop(): Promise<void> {
    this.dropConnections();
    const { http } = this;
    this.http = undefined;
    for (const stream of this.streams) stream.destroy();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
  }

  dropConnections(): void {
    for (const link of this.links) link.ssh.end();
    this.links.clear();
  }

  /** Sends job.run to the connected agent. */
  run(job: JobRun): Promise<JobRunReply> {
    const link = [...this.links].find((l) => l.helloDone);
    if (!link?.peer) return Promise.reject(new Error('no agent connected'));
    return link.peer.request('job.run', job, 10_000);
  }

  /** Channels that carried the given job, in order. */
  outputsOf(jid: string): ReceivedOutput[] {
    return this.outputs.filter((output) => output.header?.jid === jid);
  }

  private accept(ssh: Connection): void {
    const link: AgentLink = { ssh, peer: undefined, helloDone: false };
    this.links.add(link);
    ssh.on('error', () => undefined);
    ssh.on('close', () => {
      link.peer?.close();
      this.links.delete(link);
    });
    ssh.on('authentication', (ctx) => {
      if (
        ctx.method === 'password' &&
        ctx.username === CREDENTIALS.id &&
        ctx.password === CREDENTIALS.password
      )
        ctx.accept();
      else ctx.reject(['password']);
    });
    ssh.on('session', (acceptSession) => {
      const session = acceptSession();
      session.on('subsystem', (acceptChannel, reject, info) => {
        if (info.name === CONTROL_SUBSYSTEM) return this.control(link, acceptChannel());
        if (info.name === JOB_OUTPUT_SUBSYSTEM && link.helloDone) return this.output(link, acceptChannel());
        reject();
      });
    });
  }

  private control(link: AgentLink, channel: ServerChannel): void {
    const peer = new ControlPeer(channel, { side: 'server', requestTimeoutMs: 10_000 });
    link.peer = peer;
    peer
      .on('hello', (hello) => {
        this.hellos.push(hello);
        link.helloDone = true;
        return { server_version: 'test', keepalive_interval_ms: 20_000 };
      })
      .on('ping', () => ({}))
      .on('job.result', (result) => {
        if (!this.resultRequests)
          throw new ControlError(CONTROL_ERRORS.unknownType, "unknown request type 'job.result'");
        this.results.push(result);
        if (this.onResult(result) === 'error') throw new ControlError(CONTROL_ERRORS.failed, 'not stored');
        return {};
      });
  }

  private output(link: AgentLink, channel: ServerChannel): void {
    const received: ReceivedOutput = {
      header: undefined,
      stdout: [],
      stderr: [],
      end: undefined,
      acked: false,
      closed: false,
      formatError: undefined,
    };
    this.outputs.push(received);
    const decoder = new JobOutputDecoder();
    channel.on('close', () => (received.closed = true));
    channel.on('data', (chunk: Buffer) => {
      let parts: JobOutputPart[];
      try {
        parts = decoder.push(chunk);
      } catch (err) {
        received.formatError = (err as Error).message;
        channel.close();
        return;
      }
      for (const part of parts) {
        if (part.kind === 'header') received.header = part.header;
        else if (part.kind === 'end') received.end = part.end;
        else received[part.kind].push(Buffer.from(part.data));
      }
      if (decoder.finished) this.finish(link, channel, received);
    });
  }

  private finish(link: AgentLink, channel: ServerChannel, received: ReceivedOutput): void {
    const policy = this.onEnd(received);
    if (policy === 'drop the connection') {
      link.ssh.end();
      return;
    }
    if (policy === 'ack') {
      channel.write(JOB_OUTPUT_ACK);
      received.acked = true;
    }
    channel.close();
  }
}

export const joined = (chunks: Buffer[]): Buffer => Buffer.concat(chunks);
