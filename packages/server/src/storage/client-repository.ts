import type { ConnectionState } from '../core/clients/client-record.js';
import type { ClientOwner } from '../core/clients/client-events.js';
import type { ClientRepository, StoredClient } from '../core/clients/ports.js';
import type { Database } from './database.js';
import { withStorageErrors } from './errors.js';

/** Ids per UPDATE: well under every engine's limit on bound parameters (SQLite's is 32,766). */
const IDS_PER_STATEMENT = 500;

/** A disconnected row has no owner. */
const disconnectedAt = (at: number) =>
  ({
    connection_state: 'disconnected',
    disconnected_at: at,
    owner_node: null,
    connection_epoch: null,
  }) as const;

const toState = (value: string): ConnectionState => (value === 'connected' ? 'connected' : 'disconnected');

function parseDetails(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

/**
 * Client records in the `clients` table; everything but the queried columns is JSON in `details`. A client's
 * stored tunnels (`tunnels`) are deleted with it.
 */
export class SqlClientRepository implements ClientRepository {
  constructor(private readonly database: Database) {}

  loadAll(): Promise<StoredClient[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db.selectFrom('clients').selectAll().execute();
      return rows.map((row) => ({
        id: row.id,
        clientAuthId: row.client_auth_id,
        connectionState: toState(row.connection_state),
        disconnectedAt: row.disconnected_at === null ? null : Number(row.disconnected_at),
        owner:
          row.owner_node === null || row.connection_epoch === null
            ? null
            : { nodeId: row.owner_node, epoch: Number(row.connection_epoch) },
        details: parseDetails(row.details),
      }));
    });
  }

  save(client: StoredClient, ifOwner?: ClientOwner): Promise<void> {
    const columns = {
      client_auth_id: client.clientAuthId,
      connection_state: client.connectionState,
      disconnected_at: client.disconnectedAt,
      details: JSON.stringify(client.details),
      owner_node: client.owner?.nodeId ?? null,
      connection_epoch: client.owner?.epoch ?? null,
    };
    if (ifOwner)
      return withStorageErrors(async () => {
        await this.database.db
          .updateTable('clients')
          .set(columns)
          .where('id', '=', client.id)
          .where('owner_node', '=', ifOwner.nodeId)
          .where('connection_epoch', '=', ifOwner.epoch)
          .execute();
      });
    return withStorageErrors(async () => {
      const insert = this.database.db.insertInto('clients').values({ id: client.id, ...columns });
      await (
        this.database.engine === 'mysql'
          ? insert.onDuplicateKeyUpdate(columns)
          : insert.onConflict((oc) => oc.column('id').doUpdateSet(columns))
      ).execute();
    });
  }

  markAllDisconnected(at: number): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db
        .updateTable('clients')
        .set(disconnectedAt(at))
        .where('connection_state', '=', 'connected')
        .execute();
    });
  }

  markDisconnected(ids: readonly string[], at: number, ownerNode?: string): Promise<void> {
    return withStorageErrors(async () => {
      await this.database.db.transaction().execute(async (trx) => {
        for (let from = 0; from < ids.length; from += IDS_PER_STATEMENT) {
          let update = trx
            .updateTable('clients')
            .set(disconnectedAt(at))
            .where('id', 'in', ids.slice(from, from + IDS_PER_STATEMENT));
          if (ownerNode !== undefined) update = update.where('owner_node', '=', ownerNode);
          await update.execute();
        }
      });
    });
  }

  /** Deletes the client and its stored tunnels together. */
  delete(id: string): Promise<boolean> {
    return withStorageErrors(() =>
      this.database.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('tunnels').where('client_id', '=', id).execute();
        const result = await trx.deleteFrom('clients').where('id', '=', id).executeTakeFirst();
        return result.numDeletedRows > 0n;
      }),
    );
  }

  /** Deletes the clients and their stored tunnels together. */
  deleteDisconnectedBefore(cutoff: number): Promise<number> {
    return withStorageErrors(() =>
      this.database.db.transaction().execute(async (trx) => {
        const stale = trx
          .selectFrom('clients')
          .select('id')
          .where('connection_state', '=', 'disconnected')
          .where('disconnected_at', '<', cutoff);
        await trx.deleteFrom('tunnels').where('client_id', 'in', stale).execute();
        const result = await trx
          .deleteFrom('clients')
          .where('connection_state', '=', 'disconnected')
          .where('disconnected_at', '<', cutoff)
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      }),
    );
  }
}
