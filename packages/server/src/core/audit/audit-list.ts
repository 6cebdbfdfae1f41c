import { AUDIT_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /auditlog: newest first, 10 per page, at most 100 (OpenRPort's sizes). */
export const AUDIT_LIST: ListSpec = {
  resource: 'auditlog',
  sortable: ['timestamp', 'username', 'remote_ip', 'application', 'action', 'outcome', 'client_id'],
  defaultSort: '-timestamp',
  filterable: [
    'timestamp',
    'username',
    'remote_ip',
    'application',
    'action',
    'outcome',
    'affected_id',
    'client_id',
    'client_hostname',
  ],
  timeFields: ['timestamp'],
  fields: AUDIT_FIELDS,
  pagination: { defaultLimit: 10, maxLimit: 100 },
};

/** The CSV export takes the same filters and sort but no paging. */
const { pagination: _paged, ...unpaged } = AUDIT_LIST;
export const AUDIT_EXPORT: ListSpec = unpaged;
