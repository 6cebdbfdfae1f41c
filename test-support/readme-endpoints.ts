import { format } from 'prettier';
import { renderEndpointTable } from '../packages/server/src/http/openapi/endpoint-table.js';
import { startTestServer } from './server.js';

/**
 * The endpoint table as README.md holds it: rendered from the document a real svcd serves (every route
 * registered, as in production) and formatted the way Prettier formats the README.
 */
export async function readmeEndpointTable(): Promise<string> {
  const t = await startTestServer({ store: 'database:sqlite' });
  try {
    const res = await t.api.get('/openapi.json');
    if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
    const table = renderEndpointTable(res.json as Parameters<typeof renderEndpointTable>[0]);
    return (await format(table, { parser: 'markdown', printWidth: 110, proseWrap: 'preserve' })).trimEnd();
  } finally {
    await t.stop();
  }
}
