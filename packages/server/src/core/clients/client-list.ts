import type { ListSpec } from '@svc/protocol';
import { CLIENT_FIELDS } from './client-record.js';

/**
 * `groups`: the ids of the client groups a client is in. Computed, so a list shows it only when asked for with
 * `fields[clients]=...,groups` (and can filter on it with `filter[groups]=<group id>`, wildcards allowed); one
 * client (GET /clients/{id}) shows it always, as OpenRPort does.
 */
export const GROUPS_FIELD = 'groups';

const LISTED_FIELDS = [...CLIENT_FIELDS, GROUPS_FIELD];

/** The list grammar of GET /clients (DESIGN: full records by default, 50 per page, at most 500). */
export const CLIENT_LIST: ListSpec = {
  resource: 'clients',
  sortable: ['id', 'name', 'os', 'hostname', 'version', 'connection_state'],
  defaultSort: 'id',
  // Every field but tunnels (a list of objects).
  filterable: LISTED_FIELDS.filter((f) => f !== 'tunnels'),
  fields: LISTED_FIELDS,
  defaultFields: CLIENT_FIELDS,
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

/** GET /clients/{id} takes only `fields[clients]`; without it every field, `groups` included. */
export const CLIENT_ITEM: ListSpec = {
  resource: 'clients',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: LISTED_FIELDS,
  defaultFields: LISTED_FIELDS,
};
