import { mapInSlices } from '../core/slices.js';
import type { ConnectionState } from '../core/clients/client-record.js';
import type { ClientOwner } from '../core/clients/client-events.js';
import type {
  ClientChangeFeed,
  ClientChanges,
  ClientRepository,
  StoredClient,
} from '../core/clients/ports.js';
import type { Database } from './database.js';
import type { ClientsTable } from './schema.js';
import type { Selectable } from 'kysely';
import { withStorageErrors } from './errors.js';

/** Ids per UPDATE: well under every engine's limit on bound parameters (SQLite's is 32,766). */
const IDS_PER_STATEMENT = 500;
/** How long the ids of deleted clients are kept for the nodes that read changes (`changedSince`). */
export const REMOVALS_KEPT_MS = 24 * 60 * 60 * 1000;

/** A disconnected row has no owner. */
const disconnectedAt = (at: number, changedAt: number) =>
  ({
    connection_state: 'disconnected',
    disconnected_at: at,
    owner_node: null,
    connection_epoch: null,
    changed_at: changedAt,
  }) as const;

const toState = (value: string): ConnectionState => (value === 'connected' ? 'connected' : 'disconnected');

function parseDetails(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

const ROW_COLUMNS = [
  'id',
  'client_auth_id',
  'connection_state',
  'disconnected_at',
  'details',
  'owner_node',
  'connection_epoch',
] as const;

type ClientRow = Pick<Selectable<ClientsTable>, (typeof ROW_COLUMNS)[number]>;

function fromRow(row: ClientRow): StoredClient {
  return {
    id: row.id,
    clientAuthId: row.client_auth_id,
    connectionState: toState(row.connection_state),
    disconnectedAt: row.disconnected_at === null ? null : Number(row.disconnected_at),
    owner:
      row.owner_node === null || row.connection_epoch === null
        ? null
        : { nodeId: row.owner_node, epoch: Number(row.connection_epoch) },
    details: parseDetails(row.details),
  };
}

/**
 * Client records in the `clients` table; everything but the queried columns is JSON in `details`. A client's
 * stored tunnels (`tunnels`) are deleted with it. Every write stamps `changed_at` with `now()` and every delete
 * leaves the id in `client_removals`, so that cluster nodes read only what changed (`changedSince`).
 */
export class SqlClientRepository implements ClientRepository, ClientChangeFeed {
  constructor(
    private readonly database: Database,
    private readonly now: () => number = Date.now,
  ) {}

  loadAll(): Promise<StoredClient[]> {
    return withStorageErrors(async () => {
      const rows = await this.database.db.selectFrom('clients').select(ROW_COLUMNS).execute();
      return mapInSlices(rows, fromRow);
    });
  }

  changedSince(since: number): Promise<ClientChanges> {
    return withStorageErrors(async () => {
      const db = this.database.db;
      const rows = await db
        .selectFrom('clients')
        .select(ROW_COLUMNS)
        .where('changed_at', '>=', since)
        .execute();
      const removed = await db
        .selectFrom('client_removals')
        .select('id')
        .where('removed_at', '>=', since)
        .execute();
      return { rows: await mapInSlices(rows, fromRow), removed: removed.map((row) => row.id) };
    });
  }

  heldBy(nodeIds: readonly string[]): Promise<StoredClient[]> {
    if (nodeIds.length === 0) return Promise.resolve([]);
    return withStorageErrors(async () => {
      const rows = await this.database.db
        .selectFrom('clients')
        .select(ROW_COLUMNS)
        .where('connection_state', '=', 'connected')
        .where('owner_node', 'in', nodeIds)
        .execute();
      return mapInSlices(rows, fromRow);
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
      changed_at: this.now(),
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
        .set(disconnectedAt(at, this.now()))
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
            .set(disconnectedAt(at, this.now()))
            .where('id', 'in', ids.slice(from, from + IDS_PER_STATEMENT));
          if (ownerNode !== undefined) update = update.where('owner_node', '=', ownerNode);
          await update.execute();
        }
      });
    });
  }

  /** Deletes the client and its stored tunnels together, and notes the removal. */
  delete(id: string): Promise<boolean> {
    return withStorageErrors(() =>
      this.database.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('tunnels').where('client_id', '=', id).execute();
        const result = await trx.deleteFrom('clients').where('id', '=', id).executeTakeFirst();
        if (result.numDeletedRows === 0n) return false;
        await trx.deleteFrom('client_removals').where('id', '=', id).execute();
        await trx.insertInto('client_removals').values({ id, removed_at: this.now() }).execute();
        return true;
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
        const now = this.now();
        await trx.deleteFrom('tunnels').where('client_id', 'in', stale).execute();
        await trx
          .deleteFrom('client_removals')
          .where((eb) => eb.or([eb('id', 'in', stale), eb('removed_at', '<', now - REMOVALS_KEPT_MS)]))
          .execute();
        await trx
          .insertInto('client_removals')
          .columns(['id', 'removed_at'])
          .expression(
            trx
              .selectFrom('clients')
              .select((eb) => ['id', eb.lit(now).as('removed_at')])
              .where('connection_state', '=', 'disconnected')
              .where('disconnected_at', '<', cutoff),
          )
          .execute();
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
