/** Part of `npm run build`: the agent bundle `svc` runs (see agent-bundle.ts), after `tsc -b`. */
import { AGENT_BUNDLE, bundleAgent } from './agent-bundle.js';

await bundleAgent({ outfile: AGENT_BUNDLE, nativeAddons: 'external' });
