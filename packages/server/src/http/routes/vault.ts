import type { FastifyInstance } from 'fastify';
import {
  parseListQuery,
  pickFields,
  vaultEntryBodySchema,
  vaultEntryIdSchema,
  vaultEntrySchema,
  vaultListItemSchema,
} from '@svc/protocol';
import { vaultErrors } from '../../core/vault/vault-errors.js';
import { VAULT_LIST } from '../../core/vault/vault-list.js';
import type { VaultService } from '../../core/vault/vault-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, list, sparse, type ApiOperation } from '../openapi/operation.js';

type EntryParams = { Params: { id: string } };

const MAX_ID = 2 ** 31 - 1;

const OPEN_ONLY = 'Answers 409 while the vault is not set up or locked.';
const OPERATIONS = {
  list: {
    permission: 'vault',
    tag: 'vault',
    summary: 'List vault entries (never their values)',
    description: OPEN_ONLY,
    list: VAULT_LIST,
    responses: [list(sparse(vaultListItemSchema))],
  },
  get: {
    permission: 'vault',
    tag: 'vault',
    summary: 'One vault entry with its value',
    description: OPEN_ONLY,
    responses: [data(vaultEntrySchema)],
  },
  create: {
    permission: 'vault',
    tag: 'vault',
    summary: 'Add a vault entry',
    description: OPEN_ONLY,
    body: vaultEntryBodySchema,
    responses: [data(vaultEntryIdSchema, 201, 'Created')],
  },
  replace: {
    permission: 'vault',
    tag: 'vault',
    summary: 'Replace a vault entry',
    description: OPEN_ONLY,
    body: vaultEntryBodySchema,
    responses: [data(vaultEntryIdSchema)],
  },
  delete: {
    permission: 'vault',
    tag: 'vault',
    summary: 'Delete a vault entry',
    description: OPEN_ONLY,
    responses: [empty(204, 'Deleted')],
  },
} satisfies Record<string, ApiOperation>;

function entryId(raw: string): number {
  const id = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(id >= 1 && id <= MAX_ID)) throw vaultErrors.invalidId(raw);
  return id;
}

/**
 * Spec 4.10: vault entries, for any user while the vault is initialized and unlocked (409 otherwise, before the
 * body is looked at), subject to each entry's required_group.
 */
export function vaultRoutes(app: FastifyInstance, vault: VaultService): void {
  app.get('/vault', documented(OPERATIONS.list), async (request) => {
    const query = parseListQuery(request.query as Record<string, unknown>, VAULT_LIST);
    const { data, count } = await vault.list(query);
    return { data: data.map((item) => pickFields(item, query.fields)), meta: { count } };
  });

  app.get<EntryParams>('/vault/:id', documented(OPERATIONS.get), async (request) => {
    await vault.assertOpen();
    const id = entryId(request.params.id);
    return { data: await vault.get(callerOf(request).user, id) };
  });

  app.post('/vault', documented(OPERATIONS.create), async (request, reply) => {
    const caller = callerOf(request).user;
    await vault.assertOpen();
    const body = parseBody(vaultEntryBodySchema, request.body);
    return reply.status(201).send({ data: await vault.create(caller, body) });
  });

  app.put<EntryParams>('/vault/:id', documented(OPERATIONS.replace), async (request) => {
    const caller = callerOf(request).user;
    await vault.assertOpen();
    const id = entryId(request.params.id);
    const body = parseBody(vaultEntryBodySchema, request.body);
    return { data: await vault.update(caller, id, body) };
  });

  app.delete<EntryParams>('/vault/:id', documented(OPERATIONS.delete), async (request, reply) => {
    await vault.assertOpen();
    const id = entryId(request.params.id);
    await vault.delete(callerOf(request).user, id);
    return reply.status(204).send();
  });
}
