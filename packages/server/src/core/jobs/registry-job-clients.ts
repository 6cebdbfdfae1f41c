import type { ClientRegistry } from '../clients/client-registry.js';
import type { ClientRecord } from '../clients/client-record.js';
import type { TargetClient, TargetClients } from './multi-job-ports.js';
import type { JobClients } from './ports.js';

/** What the jobs domain needs of a client, read from the registry's records. */
export const registryJobClients = (registry: ClientRegistry): JobClients => ({
  describe(clientId) {
    const record = registry.get(clientId);
    return record && { name: record.name, connected: record.connection_state === 'connected' };
  },
});

const asTarget = (record: ClientRecord): TargetClient => ({
  id: record.id,
  name: record.name,
  connected: record.connection_state === 'connected',
  tags: record.tags,
  labels: record.labels,
});

/** The clients a multi-client job may target, read from the registry's records. */
export const registryTargetClients = (registry: ClientRegistry): TargetClients => ({
  get(id) {
    const record = registry.get(id);
    return record && asTarget(record);
  },
  *all() {
    for (const record of registry.sortedById()) yield asTarget(record);
  },
});
