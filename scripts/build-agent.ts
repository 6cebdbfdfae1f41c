/** `npm run build:agent`: the one-file svc agent for this machine's platform at dist-agent/svc (after `tsc -b`). */
import { relative } from 'node:path';
import { ONE_FILE_AGENT, ROOT, buildOneFileAgent } from './one-file-agent.js';

const started = performance.now();
await buildOneFileAgent();
const seconds = ((performance.now() - started) / 1000).toFixed(1);
process.stdout.write(`built ${relative(ROOT, ONE_FILE_AGENT)} in ${seconds} s\n`);
