import type { ClientRegistry } from '../clients/client-registry.js';
import type { JobClients } from './ports.js';

/** What the jobs domain needs of a client, read from the registry's records. */
export const registryJobClients = (registry: ClientRegistry): JobClients => ({
  describe(clientId) {
    const record = registry.get(clientId);
    return record && { name: record.name, connected: record.connection_state === 'connected' };
  },
});
