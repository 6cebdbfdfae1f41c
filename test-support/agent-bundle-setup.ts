/**
 * vitest global setup: `svc` (packages/agent/bin/svc.js) runs the agent bundle, so it is made again from the tsc
 * output before the tests start, never left older than `tsc -b`'s last build (~0.5 s).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_BUNDLE, ROOT, bundleAgent } from '../scripts/agent-bundle.js';

export default async function setup(): Promise<void> {
  // Without a build there is nothing to bundle; the tests that start processes say so themselves.
  if (!existsSync(join(ROOT, 'packages/agent/dist/main.js'))) return;
  await bundleAgent({ outfile: AGENT_BUNDLE, nativeAddons: 'external' });
}
