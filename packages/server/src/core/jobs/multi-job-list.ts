import { JOB_FIELDS, MULTI_JOB_FIELDS, MULTI_JOB_SUMMARY_FIELDS, type ListSpec } from '@svc/protocol';

/** The list grammar of GET /commands: newest first, 100 per page, at most 1000 (as OpenRPort). */
export const MULTI_JOB_LIST: ListSpec = {
  resource: 'commands',
  sortable: ['jid', 'started_at', 'created_by', 'command'],
  defaultSort: '-started_at',
  filterable: ['jid', 'created_by', 'command', 'is_script', 'schedule_id'],
  fields: MULTI_JOB_SUMMARY_FIELDS,
  pagination: { defaultLimit: 100, maxLimit: 1000 },
};

/** GET /commands/{jid} takes only `fields[commands]`. */
export const MULTI_JOB_ITEM: ListSpec = {
  resource: 'commands',
  sortable: [],
  defaultSort: '',
  filterable: [],
  fields: MULTI_JOB_FIELDS,
};

/**
 * The list grammar of GET /commands/{jid}/jobs, the children of one multi-client job page by page (a run on
 * 10,000 clients is too big for one answer): in the order they were started, 100 per page, at most 1000.
 */
export const MULTI_JOB_CHILDREN: ListSpec = {
  resource: 'jobs',
  sortable: ['jid', 'client_id', 'status', 'created_at', 'started_at', 'finished_at'],
  defaultSort: 'created_at',
  filterable: ['jid', 'client_id', 'status'],
  fields: JOB_FIELDS,
  pagination: { defaultLimit: 100, maxLimit: 1000 },
};
