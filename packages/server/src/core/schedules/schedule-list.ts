import { SCHEDULE_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /schedules: 20 per page, at most 100, by name. */
export const SCHEDULE_LIST: ListSpec = {
  resource: 'schedules',
  sortable: ['id', 'name', 'created_by', 'created_at', 'updated_at', 'next_run_at'],
  defaultSort: 'name',
  filterable: ['id', 'name', 'created_by', 'created_at', 'updated_at'],
  timeFields: ['created_at', 'updated_at'],
  fields: SCHEDULE_FIELDS,
  pagination: { defaultLimit: 20, maxLimit: 100 },
};

/** GET /schedules/{id} takes only `fields[schedules]`. */
export const SCHEDULE_ITEM: ListSpec = {
  resource: 'schedules',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: SCHEDULE_FIELDS,
};
