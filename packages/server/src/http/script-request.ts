import type { z } from 'zod';
import type { LibraryRunRequest } from '@svc/protocol';
import type { LibraryService } from '../core/library/library-service.js';
import { parseBody } from './body.js';

const namesLibraryScript = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && 'script_id' in body;

/**
 * A script run request: either the script itself (`script`, base64) or a library script by `script_id`, whose
 * stored text and options are used (options in the request win). Validated strictly either way.
 */
export async function parseScriptRequest<Inline extends z.ZodType, ById extends z.ZodType>(
  body: unknown,
  schemas: { inline: Inline; byId: ById },
  library: LibraryService,
): Promise<z.output<Inline>> {
  if (!namesLibraryScript(body)) return parseBody(schemas.inline, body);
  const request = parseBody(schemas.byId, body) as z.output<ById> & LibraryRunRequest;
  const { script_id: _id, ...rest } = request;
  return { ...rest, ...(await library.runOf(request)) } as z.output<Inline>;
}
