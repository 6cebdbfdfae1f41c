import { CLIENT_GROUP_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /client-groups: whole groups by default, 50 per page, at most 500 (as OpenRPort). */
export const CLIENT_GROUP_LIST: ListSpec = {
  resource: 'client_groups',
  sortable: ['id', 'description'],
  defaultSort: 'id',
  filterable: ['id', 'description'],
  fields: CLIENT_GROUP_FIELDS,
  pagination: { defaultLimit: 50, maxLimit: 500 },
};

/** GET /client-groups/{id} takes only `fields[client_groups]`. */
export const CLIENT_GROUP_ITEM: ListSpec = {
  resource: 'client_groups',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: CLIENT_GROUP_FIELDS,
};
