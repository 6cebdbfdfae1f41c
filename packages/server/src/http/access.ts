import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UserAccess, type AccessControl } from '../core/access/access-control.js';
import { callerOf } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    readonly accessControl: AccessControl | undefined;
    accessPromise: Promise<UserAccess> | undefined;
  }
}

/** Makes `accessOf(request)` answer from `control` in this instance (without it every user is unlimited). */
export function registerAccess(app: FastifyInstance, control: AccessControl | undefined): void {
  app.decorateRequest('accessControl', { getter: () => control });
  app.decorateRequest('accessPromise', undefined);
}

/** The caller's client scope and restrictions (issue 28 §2, §3), read once per request. */
export function accessOf(request: FastifyRequest): Promise<UserAccess> {
  if (!request.accessPromise) {
    const control = request.accessControl;
    request.accessPromise = control
      ? control.of(callerOf(request).user)
      : Promise.resolve(UserAccess.UNLIMITED);
  }
  return request.accessPromise;
}

/** A script body's text (base64 on the wire), as its restrictions are checked. */
export const scriptText = (base64: string): string => Buffer.from(base64, 'base64').toString('utf8');
