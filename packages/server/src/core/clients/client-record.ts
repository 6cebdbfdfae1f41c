import type { ClientData, FactsUpdate, Hello, SystemFacts, TunnelData } from '@svc/protocol';

export type ConnectionState = ClientData['connection_state'];

/** An open tunnel of a client as the API shows it (one schema, in protocol). */
export type ClientTunnel = TunnelData;

/** One element of GET /clients (one schema, in protocol). */
export type ClientRecord = ClientData;

/** Every field of a record, in output order. */
export const CLIENT_FIELDS = [
  'id',
  'name',
  'os',
  'os_arch',
  'os_family',
  'os_kernel',
  'os_full_name',
  'os_version',
  'os_virtualization_system',
  'os_virtualization_role',
  'cpu_family',
  'cpu_model',
  'cpu_model_name',
  'cpu_vendor',
  'num_cpus',
  'mem_total',
  'timezone',
  'hostname',
  'ipv4',
  'ipv6',
  'tags',
  'labels',
  'version',
  'address',
  'tunnels',
  'connection_state',
  'connected_at',
  'disconnected_at',
  'client_auth_id',
] as const satisfies readonly (keyof ClientRecord)[];

interface Identity {
  id: string;
  clientAuthId: string;
  address: string;
  connectedAt: Date;
}

/** Fixed key order, so every record serialises the same way whatever it was built from. */
export function assemble(
  base: Omit<ClientRecord, keyof SystemFacts | 'tags' | 'labels'>,
  facts: SystemFacts,
  tags: string[],
  labels: Record<string, string>,
): ClientRecord {
  return {
    id: base.id,
    name: base.name,
    os: facts.os,
    os_arch: facts.os_arch,
    os_family: facts.os_family,
    os_kernel: facts.os_kernel,
    os_full_name: facts.os_full_name,
    os_version: facts.os_version,
    os_virtualization_system: facts.os_virtualization_system,
    os_virtualization_role: facts.os_virtualization_role,
    cpu_family: facts.cpu_family,
    cpu_model: facts.cpu_model,
    cpu_model_name: facts.cpu_model_name,
    cpu_vendor: facts.cpu_vendor,
    num_cpus: facts.num_cpus,
    mem_total: facts.mem_total,
    timezone: facts.timezone,
    hostname: facts.hostname,
    ipv4: [...facts.ipv4],
    ipv6: [...facts.ipv6],
    tags: [...tags],
    labels: { ...labels },
    version: base.version,
    address: base.address,
    tunnels: base.tunnels,
    connection_state: base.connection_state,
    connected_at: base.connected_at,
    disconnected_at: base.disconnected_at,
    client_auth_id: base.client_auth_id,
  };
}

/** The record of a client whose hello was just accepted. */
export function connectedRecord(hello: Hello, who: Identity): ClientRecord {
  return assemble(
    {
      id: who.id,
      name: hello.name,
      version: hello.version,
      address: who.address,
      tunnels: [],
      connection_state: 'connected',
      connected_at: who.connectedAt.toISOString(),
      disconnected_at: null,
      client_auth_id: who.clientAuthId,
    },
    hello.facts,
    hello.tags,
    hello.labels,
  );
}

export function withFacts(record: ClientRecord, update: FactsUpdate): ClientRecord {
  return assemble(record, update.facts, update.tags, update.labels);
}

export function withTunnels(record: ClientRecord, tunnels: ClientTunnel[]): ClientRecord {
  return { ...record, tunnels };
}

/** Tunnels are closed while the client is away (spec: empty in standby); their definitions are kept elsewhere. */
export function disconnectedRecord(record: ClientRecord, at: Date): ClientRecord {
  return { ...record, connection_state: 'disconnected', disconnected_at: at.toISOString(), tunnels: [] };
}
