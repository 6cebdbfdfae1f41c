import type { FastifyInstance } from 'fastify';
import { vaultInitBodySchema, vaultStatusSchema, vaultUnlockBodySchema } from '@svc/protocol';
import type { VaultService } from '../../core/vault/vault-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';
import { data, documented, empty, type ApiOperation } from '../openapi/operation.js';

const OPERATIONS = {
  status: {
    permission: 'vault',
    tag: 'vault',
    summary: 'Whether the vault is set up and unlocked',
    responses: [data(vaultStatusSchema)],
  },
  init: {
    tag: 'vault',
    summary: 'Set up the vault with its password',
    access: 'administrators',
    body: vaultInitBodySchema,
    responses: [empty(201, 'Set up and unlocked')],
  },
  unlock: {
    tag: 'vault',
    summary: 'Unlock the vault',
    access: 'administrators',
    body: vaultUnlockBodySchema,
    responses: [empty(201, 'Unlocked')],
  },
  lock: {
    tag: 'vault',
    summary: 'Lock the vault',
    access: 'administrators',
    responses: [empty(204, 'Locked')],
  },
} satisfies Record<string, ApiOperation>;

/** Spec 4.9: the vault's state. Reading it is open to every user; init, unlock and lock to Administrators. */
export function vaultAdminRoutes(app: FastifyInstance, vault: VaultService): void {
  app.get('/vault-admin', documented(OPERATIONS.status), async () => ({ data: await vault.status() }));

  app.post('/vault-admin/init', documented(OPERATIONS.init), async (request, reply) => {
    const caller = callerOf(request).user;
    vault.assertMayAdminister(caller);
    const { password } = parseBody(vaultInitBodySchema, request.body);
    await vault.init(caller, password);
    return reply.status(201).send();
  });

  app.post('/vault-admin/sesame', documented(OPERATIONS.unlock), async (request, reply) => {
    const caller = callerOf(request).user;
    vault.assertMayAdminister(caller);
    const { password } = parseBody(vaultUnlockBodySchema, request.body);
    await vault.unlock(caller, password);
    return reply.status(201).send();
  });

  app.delete('/vault-admin/sesame', documented(OPERATIONS.lock), async (request, reply) => {
    await vault.lock(callerOf(request).user);
    return reply.status(204).send();
  });
}
