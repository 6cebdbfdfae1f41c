/**
 * `npm run docs:endpoints`: rewrites README.md's endpoint table and permission table from the OpenAPI document a real svcd serves
 * (started in this process on free loopback ports). The test in packages/server/test/api/readme-endpoints.test.ts
 * fails when they differ.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { readmeTables } from '../test-support/readme-endpoints.js';
import { withEndpointTable, withGeneratedBlock } from '../packages/server/src/http/openapi/endpoint-table.js';
import { PERMISSIONS_BEGIN, PERMISSIONS_END } from '../packages/server/src/http/openapi/permission-table.js';
import { fileURLToPath } from 'node:url';

const readmePath = fileURLToPath(new URL('../README.md', import.meta.url));
const tables = await readmeTables();
const before = await readFile(readmePath, 'utf8');
const after = withGeneratedBlock(
  withEndpointTable(before, tables.endpoints),
  PERMISSIONS_BEGIN,
  PERMISSIONS_END,
  tables.permissions,
);
await writeFile(readmePath, after);
console.log(
  before === after ? 'README.md endpoint table already up to date' : 'README.md endpoint table rewritten',
);
