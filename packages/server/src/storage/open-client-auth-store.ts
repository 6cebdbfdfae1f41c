import type { ClientAuthStore } from '../core/clients-auth/client-auth-store.js';
import type { SvcdConfig } from '../config/schema.js';
import type { Database } from './database.js';
import { FileClientAuthStore } from './file-client-auth-store.js';
import { createStaticClientAuthStore } from './static-client-auth-store.js';
import { TableClientAuthStore } from './table-client-auth-store.js';

/**
 * Opens the client credential source `[server]` names, or undefined when none is configured (agents then cannot
 * log in, and svcd says so at start).
 */
export async function openClientAuthStore(
  server: SvcdConfig['server'],
  getDatabase: () => Promise<Database>,
): Promise<ClientAuthStore | undefined> {
  if (server.auth) {
    const colon = server.auth.indexOf(':');
    return createStaticClientAuthStore({
      id: server.auth.slice(0, colon),
      password: server.auth.slice(colon + 1),
    });
  }
  if (server.auth_file) return FileClientAuthStore.open(server.auth_file);
  if (server.auth_table) return TableClientAuthStore.open(await getDatabase(), server.auth_table);
  return undefined;
}
