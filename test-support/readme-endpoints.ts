import { format } from 'prettier';
import { renderEndpointTable } from '../packages/server/src/http/openapi/endpoint-table.js';
import { renderPermissionTable } from '../packages/server/src/http/openapi/permission-table.js';
import { startTestServer } from './server.js';

/**
 * The endpoint table as README.md holds it: rendered from the document a real svcd serves (every route
 * registered, as in production) and formatted the way Prettier formats the README.
 */
export async function readmeEndpointTable(): Promise<string> {
  return (await readmeTables()).endpoints;
}

/** The endpoint table and the permission table, from one served document. */
export async function readmeTables(): Promise<{ endpoints: string; permissions: string }> {
  const t = await startTestServer({ store: 'database:sqlite' });
  try {
    const res = await t.api.get('/openapi.json');
    if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
    const doc = res.json as Parameters<typeof renderEndpointTable>[0];
    const formatted = async (table: string) =>
      (await format(table, { parser: 'markdown', printWidth: 110, proseWrap: 'preserve' })).trimEnd();
    return {
      endpoints: await formatted(renderEndpointTable(doc)),
      permissions: await formatted(renderPermissionTable(doc)),
    };
  } finally {
    await t.stop();
  }
}
