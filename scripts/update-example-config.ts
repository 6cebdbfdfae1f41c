/** `npm run update:example-config`: writes packages/server/svcd.example.conf from the config schema again. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderExampleConfig } from '../packages/server/src/config/example.js';

const exampleFile = fileURLToPath(new URL('../packages/server/svcd.example.conf', import.meta.url));
writeFileSync(exampleFile, renderExampleConfig());
console.log(`wrote ${exampleFile}`);
