/**
 * The agent control channel: one SSH session channel (subsystem CONTROL_SUBSYSTEM) opened by the agent after
 * authentication, carrying newline-delimited JSON messages `{v, type, id, payload}`.
 *
 * Every request gets exactly one `reply` or `error` with the same id (or the sender times out); notifications
 * have no id and get no answer. Both ends validate each payload with the schema of its type before dispatch, and
 * answer an unknown type with an `error` of code `unknown_type`. Identity is the SSH connection's: no payload
 * names the client it speaks for.
 */
import * as z from 'zod/mini';
import {
  jobCancelReplySchema,
  jobCancelSchema,
  jobResultSchema,
  jobRunReplySchema,
  jobRunSchema,
} from './jobs.js';

export const CONTROL_SUBSYSTEM = 'svc-control';
/** WebSocket subprotocol the agent asks for; the server refuses any other `svc-*` version. */
export const WS_SUBPROTOCOL = 'svc-v1';
/**
 * Request header of svc's upgrade (value `1`): svc takes `102 Processing` answers while svcd keeps its upgrade
 * waiting for a place, each one restarting its deadline, so svcd can keep it waiting instead of refusing it.
 */
export const AGENT_WAIT_HEADER = 'svc-wait';
/** Header of those `102 Processing` answers: about how many upgrades wait before this one. */
export const AGENT_AHEAD_HEADER = 'svc-waiting-ahead';
export const CONTROL_VERSION = 1;
/** Largest control message either end accepts; bigger data travels on its own channel. */
export const MAX_CONTROL_MESSAGE_BYTES = 256 * 1024;

export const systemFactsSchema = z.object({
  os: z.string(),
  os_arch: z.string(),
  os_family: z.string(),
  os_kernel: z.string(),
  os_full_name: z.string(),
  os_version: z.string(),
  os_virtualization_system: z.string(),
  os_virtualization_role: z.string(),
  cpu_family: z.string(),
  cpu_model: z.string(),
  cpu_model_name: z.string(),
  cpu_vendor: z.string(),
  num_cpus: z.int().check(z.nonnegative()),
  mem_total: z.int().check(z.nonnegative()),
  timezone: z.string(),
  hostname: z.string(),
  ipv4: z.array(z.string()),
  ipv6: z.array(z.string()),
});
export type SystemFacts = z.infer<typeof systemFactsSchema>;

/** Jobs a hello may list (36-character ids: about 160 KiB, within MAX_CONTROL_MESSAGE_BYTES with the facts). */
export const MAX_HELD_JOBS = 4096;

const labelsSchema = z.record(z.string().check(z.maxLength(256)), z.string().check(z.maxLength(1024)));

/** What an agent says about itself: its chosen id and name, tags, labels and the host's facts. */
export const helloSchema = z.object({
  client_id: z.string().check(z.minLength(1), z.maxLength(100)),
  name: z.string().check(z.maxLength(200)),
  /** Random per agent process, so the server can tell a reconnect of the same agent from an impostor. */
  session_id: z.string().check(z.minLength(1), z.maxLength(100)),
  version: z.string().check(z.maxLength(50)),
  tags: z.array(z.string().check(z.maxLength(256))).check(z.maxLength(100)),
  labels: labelsSchema,
  facts: systemFactsSchema,
  /**
   * The jobs this agent process still has: running, or ended with a result svcd has not acknowledged. svcd ends
   * as `unknown` every job of this client it still shows running that was sent before this hello and is not
   * listed (the agent restarted, or dropped the result). Left out when the agent does not say (an older agent,
   * or more than MAX_HELD_JOBS): svcd then waits for the job's deadline instead.
   */
  jobs: z.optional(z.array(z.uuid()).check(z.maxLength(MAX_HELD_JOBS))),
  /**
   * What this agent can do beyond the first protocol, e.g. JOB_ENV_CAPABILITY; left out by older agents. svcd
   * refuses to send a job that needs a capability the agent does not list, rather than run it without.
   */
  capabilities: z.optional(z.array(z.string().check(z.maxLength(50))).check(z.maxLength(50))),
});
export type Hello = z.infer<typeof helloSchema>;

export const helloReplySchema = z.object({
  server_version: z.string(),
  /** How often the agent should ping, in milliseconds. */
  keepalive_interval_ms: z.int().check(z.positive()),
});
export type HelloReply = z.infer<typeof helloReplySchema>;

export const factsUpdateSchema = z.object({
  tags: z.array(z.string().check(z.maxLength(256))).check(z.maxLength(100)),
  labels: labelsSchema,
  facts: systemFactsSchema,
});
export type FactsUpdate = z.infer<typeof factsUpdateSchema>;

export const emptySchema = z.strictObject({});

/** Why svcd asks the agent to connect again (shown in the agent's log). */
export const reconnectSchema = z.object({ reason: z.string().check(z.maxLength(500)) });

export const tunnelTargetSchema = z.object({
  host: z.string().check(z.minLength(1), z.maxLength(255)),
  port: z.int().check(z.gte(1), z.lte(65535)),
});
export type TunnelTarget = z.infer<typeof tunnelTargetSchema>;

export const checkPortSchema = z.extend(tunnelTargetSchema, {
  timeout_ms: z.int().check(z.positive(), z.lte(60_000)),
});
export const checkPortReplySchema = z.object({ open: z.boolean(), error: z.optional(z.string()) });
export const tunnelAllowedReplySchema = z.object({ allowed: z.boolean() });

/** Requests and notifications by type: who sends them, the payload schema and the reply schema. */
export const CONTROL_MESSAGES = {
  /** agent → server, first message on the channel. */
  hello: { from: 'agent', payload: helloSchema, reply: helloReplySchema },
  /** agent → server notification when tags, labels or facts change. */
  'facts.update': { from: 'agent', payload: factsUpdateSchema, reply: undefined },
  /**
   * server → agent notification: this node is draining (rolling upgrade); close the link and connect again at
   * once, without backoff, so the load balancer hands the agent to another node. Running jobs keep running and
   * their results go to the new node.
   */
  reconnect: { from: 'server', payload: reconnectSchema, reply: undefined },
  /** either way; liveness. */
  ping: { from: 'both', payload: emptySchema, reply: emptySchema },
  /** server → agent: can the agent open a TCP connection to host:port? */
  'tunnel.check_port': { from: 'server', payload: checkPortSchema, reply: checkPortReplySchema },
  /** server → agent: does the agent's tunnel_allowed list permit host:port? */
  'tunnel.allowed': { from: 'server', payload: tunnelTargetSchema, reply: tunnelAllowedReplySchema },
  /**
   * server → agent: get ready to relay connections to host:port. The agent checks tunnel_allowed (refusing with
   * `not_allowed`) and registers the target with a `tcpip-forward` global request, which svcd accepts only while
   * this request is in flight; svcd then opens one `forwarded-tcpip` channel per accepted TCP connection.
   * Counted: each tunnel.open needs one tunnel.close.
   */
  'tunnel.open': { from: 'server', payload: tunnelTargetSchema, reply: emptySchema },
  /** server → agent: one tunnel to host:port fewer; the last one cancels the registration. */
  'tunnel.close': { from: 'server', payload: tunnelTargetSchema, reply: emptySchema },
  /**
   * server → agent: run a command or script (see jobs.ts for the whole exchange). Error codes: `disabled`,
   * `refused` (a filter), `failed` (the process could not start).
   */
  'job.run': { from: 'server', payload: jobRunSchema, reply: jobRunReplySchema },
  /** server → agent: kill a running job's process group (see jobCancelSchema in jobs.ts). */
  'job.cancel': { from: 'server', payload: jobCancelSchema, reply: jobCancelReplySchema },
  /**
   * agent → server: a finished job's whole result (small output only; see jobs.ts). The reply comes once svcd has
   * stored it or decided never to; an error means "offer it again later".
   */
  'job.result': { from: 'agent', payload: jobResultSchema, reply: emptySchema },
} as const;
export type ControlType = keyof typeof CONTROL_MESSAGES;

export const controlEnvelopeSchema = z.object({
  v: z.literal(CONTROL_VERSION),
  type: z.string().check(z.minLength(1), z.maxLength(64)),
  id: z.optional(z.string().check(z.maxLength(64))),
  payload: z.unknown(),
});
export type ControlEnvelope = z.infer<typeof controlEnvelopeSchema>;

export const controlErrorSchema = z.object({ code: z.string(), message: z.string() });
export type ControlErrorPayload = z.infer<typeof controlErrorSchema>;

/** Error codes carried by `error` messages. */
export const CONTROL_ERRORS = {
  unknownType: 'unknown_type',
  invalidPayload: 'invalid_payload',
  alreadyConnected: 'already_connected',
  notReady: 'not_ready',
  /** The agent's tunnel_allowed list does not permit the target. */
  notAllowed: 'not_allowed',
  /** Remote commands or scripts are switched off in the agent's config. */
  disabled: 'disabled',
  /** The agent's allow/deny filters refuse the command. */
  refused: 'refused',
  failed: 'failed',
} as const;
