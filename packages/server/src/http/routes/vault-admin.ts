import type { FastifyInstance } from 'fastify';
import { vaultInitBodySchema, vaultUnlockBodySchema } from '@svc/protocol';
import type { VaultService } from '../../core/vault/vault-service.js';
import { callerOf } from '../auth.js';
import { parseBody } from '../body.js';

/** Spec 4.9: the vault's state. Reading it is open to every user; init, unlock and lock to Administrators. */
export function vaultAdminRoutes(app: FastifyInstance, vault: VaultService): void {
  app.get('/vault-admin', async () => ({ data: await vault.status() }));

  app.post('/vault-admin/init', async (request, reply) => {
    const caller = callerOf(request).user;
    const { password } = parseBody(vaultInitBodySchema, request.body);
    await vault.init(caller, password);
    return reply.status(201).send();
  });

  app.post('/vault-admin/sesame', async (request, reply) => {
    const caller = callerOf(request).user;
    const { password } = parseBody(vaultUnlockBodySchema, request.body);
    await vault.unlock(caller, password);
    return reply.status(201).send();
  });

  app.delete('/vault-admin/sesame', async (request, reply) => {
    await vault.lock(callerOf(request).user);
    return reply.status(204).send();
  });
}
