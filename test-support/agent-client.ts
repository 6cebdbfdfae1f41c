/**
 * A minimal agent for server tests, speaking the link exactly as svc does: WebSocket (subprotocol svc-v1) →
 * SSH (password login, host key checked against the MD5 colon-hex fingerprint) → session channel with subsystem
 * svc-control → ControlPeer (side 'agent') → hello with facts.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import ssh2, { type Client, type ClientChannel } from 'ssh2';
import { WebSocket, createWebSocketStream } from 'ws';
import { ControlPeer } from '../packages/platform/src/control-peer.js';
import {
  CONTROL_SUBSYSTEM,
  WS_SUBPROTOCOL,
  type Hello,
  type HelloReply,
  type SystemFacts,
} from '../packages/protocol/src/index.js';
import { TEST_FACTS } from './facts.js';

export const md5Fingerprint = (blob: Buffer): string =>
  createHash('md5')
    .update(blob)
    .digest('hex')
    .replace(/(..)(?!$)/g, '$1:');

export interface HelloOverrides extends Partial<Omit<Hello, 'facts'>> {
  facts?: Partial<SystemFacts>;
}

export function makeHello(overrides: HelloOverrides = {}): Hello {
  const { facts, ...rest } = overrides;
  return {
    client_id: 'client-1',
    name: 'Test client',
    session_id: randomUUID(),
    version: '0.1.0',
    tags: [],
    labels: {},
    ...rest,
    facts: { ...TEST_FACTS, ...facts },
  };
}

export interface AgentLinkOptions {
  /** ws://host:port of the agent listener. */
  url: string;
  authId: string;
  password: string;
  /** Expected fingerprint (or its start); the connection fails when the host key differs. */
  fingerprint: string;
  protocol?: string;
}

export interface SshLink {
  ws: WebSocket;
  stream: Duplex;
  ssh: Client;
  /** Resolves when the SSH connection has closed, whoever closed it. */
  closed: Promise<void>;
}

/** WebSocket + SSH login; rejects with ssh2's error (e.g. "All configured authentication methods failed"). */
export function openSsh(options: AgentLinkOptions): Promise<SshLink> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(options.url, options.protocol ?? WS_SUBPROTOCOL, { perMessageDeflate: false });
    ws.once('error', reject);
    ws.once('open', () => {
      const stream = createWebSocketStream(ws);
      stream.on('error', () => undefined);
      ws.once('close', () => stream.destroy());
      const ssh = new ssh2.Client();
      const closed = new Promise<void>((done) => ssh.once('close', () => done()));
      ssh.once('error', reject);
      ssh.once('ready', () => {
        ssh.off('error', reject);
        ssh.on('error', () => undefined);
        resolve({ ws, stream, ssh, closed });
      });
      ssh.connect({
        sock: stream,
        username: options.authId,
        password: options.password,
        keepaliveInterval: 0,
        readyTimeout: 10_000,
        hostVerifier: (key: Buffer) => md5Fingerprint(key).startsWith(options.fingerprint),
      });
    });
  });
}

/** Opens a session channel with the given subsystem; rejects when the server refuses it. */
export function openSubsystem(ssh: Client, name: string): Promise<ClientChannel> {
  return new Promise((resolve, reject) =>
    ssh.subsys(name, (err, channel) => (err ? reject(err) : resolve(channel))),
  );
}

export interface TestAgent extends SshLink {
  channel: ClientChannel;
  peer: ControlPeer;
  hello(overrides?: HelloOverrides): Promise<HelloReply>;
  /** Stops reading from the socket: the server's pings go unanswered, as with a dead peer. */
  pause(): void;
  /** Ends the SSH connection and waits until it is closed. */
  close(): Promise<void>;
}

/** Logs in and opens the control channel; call `hello()` next (or use connectClient). */
export async function connectAgent(options: AgentLinkOptions): Promise<TestAgent> {
  const link = await openSsh(options);
  const channel = await openSubsystem(link.ssh, CONTROL_SUBSYSTEM);
  const peer = new ControlPeer(channel, { side: 'agent', requestTimeoutMs: 10_000 });
  peer.on('ping', () => ({}));
  return {
    ...link,
    channel,
    peer,
    hello: (overrides) => peer.request('hello', makeHello(overrides)),
    pause: () => link.stream.pause(),
    async close() {
      link.ssh.end();
      await link.closed;
    },
  };
}

/** Connects and says hello; the agent is listed as connected when this resolves. */
export async function connectClient(
  options: AgentLinkOptions,
  hello: HelloOverrides = {},
): Promise<TestAgent & { reply: HelloReply }> {
  const agent = await connectAgent(options);
  try {
    const reply = await agent.hello(hello);
    return Object.assign(agent, { reply });
  } catch (err) {
    await agent.close();
    throw err;
  }
}

export { TEST_FACTS };
