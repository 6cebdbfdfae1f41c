import { applyListQuery } from '@svc/protocol';
import type { ClientAuthStore, ClientCredential } from '../core/clients-auth/client-auth-store.js';

/** `[server] auth = "id:password"`: one credential; the API refuses to manage it. */
export function createStaticClientAuthStore(credential: ClientCredential): ClientAuthStore {
  const refuse = () => Promise.reject(new Error('the static client credential cannot be changed'));
  return {
    kind: 'static',
    get: (id) => Promise.resolve(id === credential.id ? credential : undefined),
    list: (query) =>
      Promise.resolve(applyListQuery([credential], query) as { data: ClientCredential[]; count: number }),
    create: refuse,
    delete: refuse,
  };
}
