import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { readmeTables } from '../../../../test-support/readme-endpoints.js';
import { PERMISSIONS_BEGIN, PERMISSIONS_END } from '../../src/http/openapi/permission-table.js';
import {
  ENDPOINTS_BEGIN,
  ENDPOINTS_END,
  renderEndpointTable,
  withEndpointTable,
} from '../../src/http/openapi/endpoint-table.js';

const README = fileURLToPath(new URL('../../../../README.md', import.meta.url));

test("README.md's endpoint table is the one the served OpenAPI document gives (npm run docs:endpoints)", async () => {
  const readme = await readFile(README, 'utf8');
  const { endpoints: table, permissions } = await readmeTables();
  const permissionBlock = readme.slice(
    readme.indexOf(PERMISSIONS_BEGIN) + PERMISSIONS_BEGIN.length,
    readme.indexOf(PERMISSIONS_END),
  );
  // The one table of named permissions, with the operations the document says need each.
  expect(readme).toContain(PERMISSIONS_BEGIN);
  expect(permissionBlock.trim()).toBe(permissions);
  expect(permissions).toMatch(/^\| `commands` +\| run commands/m);
  const block = readme.slice(
    readme.indexOf(ENDPOINTS_BEGIN) + ENDPOINTS_BEGIN.length,
    readme.indexOf(ENDPOINTS_END),
  );
  expect(block.trim()).toBe(table);
  // Every path of the document is in the table, so a new route cannot be missed.
  expect(table).toContain('`/status`');
  expect(table).toContain('`/clients/{id}/commands`');
});

test('the table says who may call each operation and groups operations by tag', () => {
  const table = renderEndpointTable({
    paths: {
      '/api/v1/login': { get: { tags: ['auth'], summary: 'Log in', security: [{ basicAuth: [] }] } },
      '/api/v1/openapi.json': { get: { tags: ['meta'], summary: 'This document', security: [] } },
      '/api/v1/users': {
        get: { tags: ['users'], summary: 'List users', 'x-svc-access': 'administrators' },
        post: { tags: ['users'], summary: 'Create a | user' },
        put: { tags: ['users'], summary: 'Run', 'x-svc-permission': 'commands' },
      },
    },
  });
  expect(table).toContain('| GET | `/login` | Basic credentials | Log in |');
  expect(table).toContain('| GET | `/openapi.json` | anyone | This document |');
  expect(table).toContain('| GET | `/users` | Administrators | List users |');
  expect(table).toContain('| POST | `/users` | any user | Create a \\| user |');
  expect(table).toContain('| PUT | `/users` | `commands` | Run |');
  expect(table.indexOf('**auth**')).toBeLessThan(table.indexOf('**meta**'));
});

test('rewriting needs both markers', () => {
  expect(() => withEndpointTable('no markers here', 'x')).toThrow(/markers/);
  const text = `a\n${ENDPOINTS_BEGIN}\nold\n${ENDPOINTS_END}\nb`;
  expect(withEndpointTable(text, 'new')).toBe(`a\n${ENDPOINTS_BEGIN}\n\nnew\n\n${ENDPOINTS_END}\nb`);
});
