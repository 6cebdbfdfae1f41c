import { tunnelSchema, type SystemFacts } from '@svc/protocol';
import type { ClientOwner } from './client-events.js';
import { assemble, type ClientRecord } from './client-record.js';
import type { StoredClient } from './ports.js';

/** The row of a record and its owner: the columns the database queries on, the rest as details. */
export function toStored(record: ClientRecord, owner: ClientOwner | undefined): StoredClient {
  const { id, client_auth_id, connection_state, disconnected_at, ...details } = record;
  return {
    id,
    clientAuthId: client_auth_id,
    connectionState: connection_state,
    disconnectedAt: disconnected_at === null ? null : Date.parse(disconnected_at),
    owner: connection_state === 'connected' && owner ? { ...owner } : null,
    details,
  };
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
const texts = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const textMap = (v: unknown): Record<string, string> =>
  isObject(v)
    ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};
const isoOrNull = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const storedTunnels = tunnelSchema.array();
/** The open tunnels a connected row lists (another cluster node listens for them); none when they do not parse. */
const tunnelsOf = (v: unknown): ClientRecord['tunnels'] => storedTunnels.safeParse(v).data ?? [];

/** Rebuilds a record from its row, tolerating details written by an older svcd (missing keys get defaults). */
export function fromStored(row: StoredClient): ClientRecord {
  const d = isObject(row.details) ? row.details : {};
  const facts: SystemFacts = {
    os: text(d.os),
    os_arch: text(d.os_arch),
    os_family: text(d.os_family),
    os_kernel: text(d.os_kernel),
    os_full_name: text(d.os_full_name),
    os_version: text(d.os_version),
    os_virtualization_system: text(d.os_virtualization_system),
    os_virtualization_role: text(d.os_virtualization_role),
    cpu_family: text(d.cpu_family),
    cpu_model: text(d.cpu_model),
    cpu_model_name: text(d.cpu_model_name),
    cpu_vendor: text(d.cpu_vendor),
    num_cpus: count(d.num_cpus),
    mem_total: count(d.mem_total),
    timezone: text(d.timezone),
    hostname: text(d.hostname),
    ipv4: texts(d.ipv4),
    ipv6: texts(d.ipv6),
  };
  return assemble(
    {
      id: row.id,
      name: text(d.name),
      version: text(d.version),
      address: text(d.address),
      // No tunnel of a disconnected client is open; a connected row (held by another cluster node) lists its own.
      tunnels: row.connectionState === 'connected' ? tunnelsOf(d.tunnels) : [],
      connection_state: row.connectionState,
      connected_at: isoOrNull(d.connected_at),
      disconnected_at: row.disconnectedAt === null ? null : new Date(row.disconnectedAt).toISOString(),
      client_auth_id: row.clientAuthId,
    },
    facts,
    texts(d.tags),
    textMap(d.labels),
  );
}
