import { JOB_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /clients/{id}/commands: newest first, 100 per page, at most 1000 (as OpenRPort). */
export const JOB_LIST: ListSpec = {
  resource: 'jobs',
  sortable: ['jid', 'status', 'created_at', 'started_at', 'finished_at', 'created_by', 'command'],
  defaultSort: '-created_at',
  filterable: ['jid', 'status', 'created_by', 'command', 'is_script', 'multi_job_id'],
  fields: JOB_FIELDS,
  pagination: { defaultLimit: 100, maxLimit: 1000 },
};

/** GET /clients/{id}/commands/{jid} takes only `fields[jobs]`. */
export const JOB_ITEM: ListSpec = {
  resource: 'jobs',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: JOB_FIELDS,
};
