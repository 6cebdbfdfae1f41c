import { loadSvcdConfig, type SvcdConfig } from '../config/schema.js';
import { clusterNodeId } from '../cluster/cluster-seam.js';
import { requestDrain } from '../cluster/drain-request.js';
import { resolveConfigPaths } from './resolve-paths.js';

/** The config as svcd reads it; warnings about OpenRPort keys are left to the running node. */
export const loadDrainConfig = (path: string): SvcdConfig =>
  resolveConfigPaths(
    loadSvcdConfig(path, () => undefined),
    path,
  );

/** `svcd drain`: asks the node over NATS, prints what it says, fails when agents were left behind. */
export async function runDrainCommand(
  config: SvcdConfig,
  node: string | undefined,
  print: (line: string) => void,
): Promise<void> {
  if (!config.cluster.enabled)
    throw new Error(
      'svcd drain needs [cluster] enabled = true: a single node has nowhere to move its agents',
    );
  const nodeId = node ?? clusterNodeId(config.cluster);
  const outcome = await requestDrain(config.cluster, nodeId, ({ clients }) =>
    print(`node ${nodeId}: draining ${clients} agents (at most ${config.cluster.drain_timeout} ms)`),
  );
  print(
    `node ${nodeId}: ${outcome.moved} of ${outcome.clients} agents moved to other nodes in ${outcome.duration_ms} ms; stopping`,
  );
  if (outcome.not_moved > 0)
    throw new Error(`node ${nodeId}: ${outcome.not_moved} agents had not moved when drain_timeout passed`);
}
