/**
 * The request's essentials kept in an audit record. An allowlist: a body field is kept only when its name is one
 * known to carry no secret (ids, names, targets, the command run, tunnel settings…); any other field is kept by
 * name with the value replaced by OMITTED, so a password, a vault value, a token or a TOTP code can never reach
 * the log, whatever the route calls it. Script bodies are reduced to their length.
 */
export const OMITTED = '[omitted]';

const KEPT = new Set([
  'id',
  'ids',
  'jid',
  'name',
  'username',
  'groups',
  'group',
  'group_ids',
  'client_id',
  'client_ids',
  'client_auth_id',
  'tags',
  'labels',
  'operator',
  'command',
  'interpreter',
  'cwd',
  'is_sudo',
  'timeout_sec',
  'execute_concurrently',
  'abort_on_error',
  'script_id',
  'type',
  'schedule',
  'timezone',
  'overlaps',
  'scheme',
  'local',
  'remote',
  'acl',
  'protocol',
  'idle_timeout_minutes',
  'auto_close',
  'skip_idle_timeout',
  'http_proxy',
  'host_header',
  'description',
  'page',
  'scope',
  'expires_at',
  'enabled',
  'required_user',
  'created_by',
  'only',
  'force',
  'delete',
  'method',
  'delivery_method',
  'sort',
  'columns',
  'search',
  'params',
]);

const SUMMARISED = new Set(['script', 'script_base64']);

const MAX_DEPTH = 6;
const MAX_ITEMS = 100;

function keep(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return OMITTED;
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((item) => keep(item, depth + 1));
    if (value.length > MAX_ITEMS) items.push(`… ${value.length - MAX_ITEMS} more`);
    return items;
  }
  const kept: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    if (KEPT.has(key)) kept[key] = keep(inner, depth + 1);
    else if (SUMMARISED.has(key) && typeof inner === 'string') kept[key] = `[${inner.length} characters]`;
    else kept[key] = OMITTED;
  }
  return kept;
}

/** The allowed part of a JSON request body (anything but an object or array is omitted whole). */
export function bodyEssentials(body: unknown): unknown {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object') return OMITTED;
  return keep(body, 0);
}

/** Query parameters are kept by the same allowlist (list grammar keys such as filter[…] are kept as they are). */
export function queryEssentials(query: unknown): Record<string, unknown> | undefined {
  if (query === null || typeof query !== 'object') return undefined;
  const entries = Object.entries(query as Record<string, unknown>);
  if (entries.length === 0) return undefined;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    const listKey = /^(filter|sort|page|fields)(\[|$)/.test(key);
    kept[key] = listKey || KEPT.has(key) ? keep(value, 1) : OMITTED;
  }
  return kept;
}

export const MAX_ESSENTIALS_CHARS = 4096;

/** JSON text of at most MAX_ESSENTIALS_CHARS characters (cut ones end with "…"). */
export function compactJson(value: unknown): string {
  const text = JSON.stringify(value) ?? '';
  return text.length <= MAX_ESSENTIALS_CHARS ? text : `${text.slice(0, MAX_ESSENTIALS_CHARS - 1)}…`;
}
