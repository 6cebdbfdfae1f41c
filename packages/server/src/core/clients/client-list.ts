import type { ListSpec } from '@svc/protocol';
import { CLIENT_FIELDS } from './client-record.js';

/** The list grammar of GET /clients (DESIGN: full records by default, 50 per page, at most 500). */
export const CLIENT_LIST: ListSpec = {
  resource: 'clients',
  sortable: ['id', 'name', 'os', 'hostname', 'version', 'connection_state'],
  defaultSort: 'id',
  // Every field but tunnels (a list of objects).
  filterable: CLIENT_FIELDS.filter((f) => f !== 'tunnels'),
  fields: CLIENT_FIELDS,
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

/** GET /clients/{id} takes only `fields[clients]`. */
export const CLIENT_ITEM: ListSpec = {
  resource: 'clients',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: CLIENT_FIELDS,
};
