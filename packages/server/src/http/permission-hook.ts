import type { FastifyInstance } from 'fastify';
import type { Permission } from '@svc/protocol';
import type { Permissions } from '../core/permissions/permissions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The permission this request was refused for, for its audit record. */
    missingPermission: Permission | undefined;
  }
}

/**
 * The one check of the named permission a route declares on its operation (`permission`), after the auth hook
 * has found the caller: 403 ERR_PERMISSION_REQUIRED naming it. Register after registerAuthHook.
 */
export function registerPermissionHook(app: FastifyInstance, permissions: Permissions): void {
  if (!app.hasRequestDecorator('missingPermission')) app.decorateRequest('missingPermission', undefined);
  app.addHook('onRequest', async (request) => {
    const permission = request.routeOptions.config.operation?.permission;
    if (!permission || !request.caller) return;
    try {
      await permissions.assert(request.caller.user, permission);
    } catch (err) {
      request.missingPermission = permission;
      throw err;
    }
  });
}
