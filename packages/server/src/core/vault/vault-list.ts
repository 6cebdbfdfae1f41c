import { VAULT_LIST_FIELDS, type ListSpec } from '@svc/protocol';

/**
 * The list grammar of GET /vault. OpenRPort returns the whole vault unpaginated; svcd pages it with a default
 * large enough that a vault of ordinary size still arrives in one answer, and `meta.count` tells when it did not.
 */
export const VAULT_LIST: ListSpec = {
  resource: 'vault',
  sortable: ['id', 'client_id', 'created_by', 'created_at', 'key'],
  defaultSort: 'id',
  filterable: ['id', 'client_id', 'created_by', 'key'],
  fields: VAULT_LIST_FIELDS,
  pagination: { defaultLimit: 1000, maxLimit: 10_000 },
};
