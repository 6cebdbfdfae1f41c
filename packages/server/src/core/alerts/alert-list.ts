import type { ListSpec } from '@svc/protocol';

const FIELDS = [
  'id',
  'alert_id',
  'rule',
  'event',
  'channel',
  'target',
  'attempt',
  'at',
  'outcome',
  'http_status',
  'error',
  'node',
] as const;

/** The list grammar of GET /alerts/deliveries: the newest attempts first, 100 per page by default. */
export const ALERT_DELIVERY_LIST: ListSpec = {
  resource: 'deliveries',
  sortable: ['id', 'rule', 'event', 'channel', 'at', 'outcome', 'attempt', 'node'],
  defaultSort: '-at,-id',
  filterable: ['alert_id', 'rule', 'event', 'channel', 'outcome', 'http_status', 'node', 'at'],
  timeFields: ['at'],
  fields: FIELDS,
  pagination: { defaultLimit: 100, maxLimit: 1000 },
};
