import type { LiveConnections } from '../gateway/live-connections.js';
import type { ClientsLog } from '../core/clients/ports.js';
import type { ClientOwner } from '../core/clients/client-events.js';

/** What a drain did, logged by the node and sent to `svcd drain`. */
export interface DrainOutcome {
  node_id: string;
  /** Agents this node held when the drain began. */
  clients: number;
  /** Of those, the ones another node holds by the end. */
  moved: number;
  /** Still held by no other node when `drain_timeout` passed. */
  not_moved: number;
  duration_ms: number;
}

export interface DrainParts {
  nodeId: string;
  /** Closes the agent listener (the load balancer's check then fails and new agents go elsewhere). */
  stopAccepting: () => void;
  connections: LiveConnections;
  /** Which node holds the client now (presence). */
  owner: (clientId: string) => Promise<ClientOwner | undefined>;
  timeoutMs: number;
  log: ClientsLog;
}

/** How often the clients not yet seen elsewhere are looked up again. */
const RECHECK_MS = 250;

/**
 * Drains a node for a rolling upgrade: stops taking agents, asks every agent it holds to reconnect at once (the
 * load balancer sends them to the other nodes), and waits, at most `timeoutMs`, until another node holds each.
 */
export async function drainNode(parts: DrainParts): Promise<DrainOutcome> {
  const started = Date.now();
  parts.stopAccepting();
  const held = await parts.connections.moveAll('svcd is draining: connect to another node');
  parts.log.info({ clients: held.length, timeout_ms: parts.timeoutMs }, 'draining: agents asked to move');
  let waiting = new Set(held);
  const deadline = started + parts.timeoutMs;
  while (waiting.size > 0) {
    const ids = [...waiting];
    const owners = await Promise.all(ids.map((id) => parts.owner(id).catch(() => undefined)));
    waiting = new Set(ids.filter((_, i) => !owners[i] || owners[i].nodeId === parts.nodeId));
    if (waiting.size === 0 || Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(RECHECK_MS, deadline - Date.now())));
  }
  const outcome: DrainOutcome = {
    node_id: parts.nodeId,
    clients: held.length,
    moved: held.length - waiting.size,
    not_moved: waiting.size,
    duration_ms: Date.now() - started,
  };
  if (waiting.size > 0)
    parts.log.warn(
      { ...outcome, first_not_moved: [...waiting].slice(0, 10) },
      'drain timeout passed before every agent moved to another node',
    );
  else parts.log.info(outcome, 'drained: every agent moved to another node');
  return outcome;
}
