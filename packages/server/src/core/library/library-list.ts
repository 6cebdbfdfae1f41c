import { LIBRARY_SCRIPT_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /library/scripts (spec 4.4): 20 per page, at most 100 (as OpenRPort). */
export const LIBRARY_SCRIPT_LIST: ListSpec = {
  resource: 'scripts',
  sortable: ['id', 'name', 'created_by', 'created_at', 'updated_by', 'updated_at'],
  defaultSort: 'name',
  filterable: ['id', 'name', 'created_by', 'created_at', 'updated_by', 'updated_at'],
  timeFields: ['created_at', 'updated_at'],
  fields: LIBRARY_SCRIPT_FIELDS,
  pagination: { defaultLimit: 20, maxLimit: 100 },
};

/** GET /library/scripts/{id} takes only `fields[scripts]`. */
export const LIBRARY_SCRIPT_ITEM: ListSpec = {
  resource: 'scripts',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: LIBRARY_SCRIPT_FIELDS,
};
