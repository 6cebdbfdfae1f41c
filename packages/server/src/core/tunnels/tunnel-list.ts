import type { ListSpec } from '@svc/protocol';

const FIELDS = [
  'client_id',
  'client_name',
  'id',
  'lhost',
  'lport',
  'rhost',
  'rport',
  'scheme',
  'acl',
  'owner',
  'open',
  'tunnel_url',
  'created_at',
] as const;

/**
 * The list grammar of GET /tunnels: the tunnels of the clients connected to this node, from memory (a few per
 * client at most), 100 per page by default.
 */
export const TUNNEL_LIST: ListSpec = {
  resource: 'tunnels',
  sortable: ['client_id', 'client_name', 'id', 'owner', 'scheme', 'created_at', 'rport', 'lport'],
  defaultSort: 'client_id,id',
  filterable: FIELDS,
  fields: [
    ...FIELDS,
    'idle_timeout_minutes',
    'auto_close',
    'active_connections',
    'idle_close_at',
    'close_at',
  ],
  pagination: { defaultLimit: 100, maxLimit: 1000 },
};
