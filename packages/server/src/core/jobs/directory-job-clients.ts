import type { ClientDirectory } from '../clients/client-directory.js';
import type { ClientRecord } from '../clients/client-record.js';
import type { TargetClient, TargetClients } from './multi-job-ports.js';
import type { JobClients } from './ports.js';

/** What the jobs domain needs of a client, read from the client directory. */
export const directoryJobClients = (directory: ClientDirectory): JobClients => ({
  describe(clientId) {
    const record = directory.get(clientId);
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

/** The clients a multi-client job may target, read from the client directory. */
export const directoryTargetClients = (directory: ClientDirectory): TargetClients => ({
  get(id) {
    const record = directory.get(id);
    return record && asTarget(record);
  },
  *all() {
    for (const record of directory.sortedById()) yield asTarget(record);
  },
});
