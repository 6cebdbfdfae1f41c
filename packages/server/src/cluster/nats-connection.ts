import { readFileSync } from 'node:fs';
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';
import type { SvcdConfig } from '../config/schema.js';

/** Connects to the cluster's NATS as `[cluster]` says; rejects naming the server when it cannot. */
export async function connectNats(cluster: SvcdConfig['cluster'], nodeId: string): Promise<NatsConnection> {
  const options: ConnectionOptions = {
    servers: cluster.nats_url,
    name: `svcd ${nodeId}`,
    // Keep trying for ever: a node serves its own agents while NATS is away.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1_000,
    // nats.js otherwise builds an Error (a stack trace) for every request, just in case it times out: 2 % of a
    // node's CPU while agents reconnect. Our errors say what timed out without it.
    noAsyncTraces: true,
  };
  if (cluster.nats_token) options.token = cluster.nats_token;
  if (cluster.nats_user) {
    options.user = cluster.nats_user;
    options.pass = cluster.nats_password;
  }
  if (cluster.nats_tls_ca) options.tls = { ca: readFileSync(cluster.nats_tls_ca, 'utf8') };
  try {
    return await connect(options);
  } catch (err) {
    throw new Error(`[cluster] nats_url: cannot connect to ${cluster.nats_url}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
