import type { Selectable } from 'kysely';
import type { StoredPort, StoredTunnel, TunnelRepository } from '../core/tunnels/ports.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';
import type { TunnelsTable } from './schema.js';

const nullableNumber = (value: number | string | null): number | null =>
  value === null ? null : Number(value);

function fromRow(row: Selectable<TunnelsTable>): StoredTunnel {
  return {
    clientId: row.client_id,
    id: Number(row.id),
    lhost: row.lhost,
    lport: Number(row.lport),
    lportRandom: Number(row.lport_random) === 1,
    rhost: row.rhost,
    rport: Number(row.rport),
    acl: row.acl,
    idleTimeoutMinutes: Number(row.idle_timeout_minutes),
    autoCloseMs: nullableNumber(row.auto_close_ms),
    closeAt: nullableNumber(row.close_at),
    scheme: row.scheme,
    owner: row.owner,
    apiHost: row.api_host,
    createdAt: Number(row.created_at),
  };
}

/** Tunnel definitions in the `tunnels` table. */
export class SqlTunnelRepository implements TunnelRepository {
  constructor(private readonly database: Database) {}

  listByClient(clientId: string): Promise<StoredTunnel[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('tunnels')
        .selectAll()
        .where('client_id', '=', clientId)
        .orderBy('id')
        .execute();
      return rows.map(fromRow);
    });
  }

  clientsWithTunnels(clientIds: readonly string[]): Promise<Set<string>> {
    if (clientIds.length === 0) return Promise.resolve(new Set());
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('tunnels')
        .select('client_id')
        .distinct()
        .where('client_id', 'in', clientIds)
        .execute();
      return new Set(rows.map((row) => row.client_id));
    });
  }

  listPorts(): Promise<StoredPort[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('tunnels')
        .select(['client_id', 'id', 'lport'])
        .execute();
      return rows.map((row) => ({ clientId: row.client_id, id: Number(row.id), lport: Number(row.lport) }));
    });
  }

  insert(tunnel: StoredTunnel): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .insertInto('tunnels')
        .values({
          client_id: tunnel.clientId,
          id: tunnel.id,
          lhost: tunnel.lhost,
          lport: tunnel.lport,
          lport_random: tunnel.lportRandom ? 1 : 0,
          rhost: tunnel.rhost,
          rport: tunnel.rport,
          acl: tunnel.acl,
          idle_timeout_minutes: tunnel.idleTimeoutMinutes,
          auto_close_ms: tunnel.autoCloseMs,
          close_at: tunnel.closeAt,
          scheme: tunnel.scheme,
          owner: tunnel.owner,
          api_host: tunnel.apiHost,
          created_at: tunnel.createdAt,
        })
        .execute();
    });
  }

  updatePort(clientId: string, id: number, lport: number): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .updateTable('tunnels')
        .set({ lport })
        .where('client_id', '=', clientId)
        .where('id', '=', id)
        .execute();
    });
  }

  delete(clientId: string, id: number): Promise<boolean> {
    return withStorageErrors(async () => {
      const result = await this.database.db
        .deleteFrom('tunnels')
        .where('client_id', '=', clientId)
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }
}
