import { ErrorCode, type NatsConnection, type NatsError } from 'nats';
import type { SvcdConfig } from '../config/schema.js';
import { decodeJson, encodeJson } from './dispatch-wire.js';
import { connectNats } from './nats-connection.js';
import type { DrainOutcome } from './node-drain.js';

/** `svcd drain` asks a node over NATS on this subject; the node answers at once and then drains. */
export const drainSubject = (prefix: string, nodeId: string): string => `${prefix}.node.${nodeId}.drain`;
/** Where the node publishes its DrainOutcome when the wait is over (just before it stops). */
export const drainedSubject = (prefix: string, nodeId: string): string => `${prefix}.node.${nodeId}.drained`;

export interface DrainAccepted {
  node_id: string;
  clients: number;
}

/** How long the node may take to accept the request. */
const ACCEPT_TIMEOUT_MS = 5_000;
/** Beyond drain_timeout: the listing of where the agents went and the start of the stop. */
const OUTCOME_MARGIN_MS = 15_000;

/**
 * `svcd drain`: asks the node (this config's node unless another is named) to drain, then waits for what it
 * reports. The node stops once drained, as on SIGTERM.
 */
export async function requestDrain(
  cluster: SvcdConfig['cluster'],
  nodeId: string,
  onAccepted: (accepted: DrainAccepted) => void,
): Promise<DrainOutcome> {
  const nc: NatsConnection = await connectNats(cluster, `drain ${nodeId}`);
  try {
    const outcome = nc.subscribe(drainedSubject(cluster.nats_prefix, nodeId), { max: 1 });
    let accepted: DrainAccepted;
    try {
      const reply = await nc.request(drainSubject(cluster.nats_prefix, nodeId), encodeJson({}), {
        timeout: ACCEPT_TIMEOUT_MS,
      });
      accepted = decodeJson<DrainAccepted>(reply.data);
    } catch (err) {
      if ((err as NatsError).code === (ErrorCode.NoResponders as string))
        throw new Error(`node '${nodeId}' is not running in this cluster (nothing answers for it on NATS)`);
      throw err;
    }
    onAccepted(accepted);
    const waitMs = cluster.drain_timeout + OUTCOME_MARGIN_MS;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`node '${nodeId}' did not report the end of its drain within ${waitMs} ms`)),
        waitMs,
      );
    });
    const reported = (async () => {
      for await (const message of outcome) return decodeJson<DrainOutcome>(message.data);
      throw new Error(`the NATS connection closed before node '${nodeId}' reported`);
    })();
    try {
      return await Promise.race([reported, late]);
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await nc.drain().catch(() => undefined);
  }
}
