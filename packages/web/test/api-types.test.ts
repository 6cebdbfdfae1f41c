import { readFile } from 'node:fs/promises';
import { expect, test } from 'vitest';
import {
  generateWebApiTypes,
  servedOpenApiDocument,
  WEB_API_TYPES_FILE,
} from '../../../scripts/web-api-types.js';

test('the console API types are what the served OpenAPI document generates', async () => {
  const generated = await generateWebApiTypes(await servedOpenApiDocument());
  expect(
    (await readFile(WEB_API_TYPES_FILE, 'utf8')) === generated,
    'packages/web/src/api/openapi.gen.ts is stale: run node --import tsx scripts/web-api-types.ts',
  ).toBe(true);
});
