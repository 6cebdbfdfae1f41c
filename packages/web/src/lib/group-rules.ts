/**
 * The client group rule editor's model: one row per param, with a mode and its patterns, and the conversion to
 * and from the API's params (`null`, a list = any pattern, `{and: [...]}`, `{or: [...]}`; spec 4.11).
 */
import type { paths } from '../api/openapi.gen.js';

type ApiParams = NonNullable<
  paths['/api/v1/client-groups']['post']['requestBody']
>['content']['application/json']['params'];
/** The param keys the API stores (its spelling `label` is read, never written, here). */
export type ClientGroupParamKey = Exclude<keyof NonNullable<ApiParams>, 'label'>;

export type RuleMode = 'any' | 'and' | 'or';

export interface RuleRow {
  key: ClientGroupParamKey;
  mode: RuleMode;
  /** Patterns as typed, comma-separated (`*` is a wildcard; labels are `key:value`). */
  text: string;
}

type ParamValue = string[] | { and: string[] } | { or: string[] } | null;
export type GroupParams = Record<ClientGroupParamKey, ParamValue>;

/**
 * Every param, in the API's output order with a label for the editor. Kept here rather than imported from
 * @svc/protocol (whose module builds its zod schemas on load, 80 KB the page does not need); the Record type
 * makes the compiler check this list against the generated OpenAPI types.
 */
export const PARAM_LABELS: Record<ClientGroupParamKey, string> = {
  client_id: 'Client id',
  name: 'Name',
  os: 'OS',
  os_arch: 'OS architecture',
  os_family: 'OS family',
  os_kernel: 'OS kernel',
  hostname: 'Hostname',
  ipv4: 'IPv4 address',
  ipv6: 'IPv6 address',
  tag: 'Tag',
  version: 'Agent version',
  address: 'Connected from',
  client_auth_id: 'Client credential',
  labels: 'Label (key:value)',
};

export const PARAM_KEYS = Object.keys(PARAM_LABELS) as readonly ClientGroupParamKey[];

export const MODE_LABELS: Record<RuleMode, string> = {
  any: 'matches any of',
  and: 'matches all of (and)',
  or: 'matches one of (or)',
};

/** The patterns of a row: split at commas, trimmed, empty ones dropped. */
export function patternsOf(text: string): string[] {
  return text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** The API's params for the rows; rows without a pattern leave their param unset, a later row wins a key. */
export function paramsOf(rows: readonly RuleRow[]): GroupParams {
  const params = Object.fromEntries(PARAM_KEYS.map((key) => [key, null])) as GroupParams;
  for (const row of rows) {
    const patterns = patternsOf(row.text);
    if (patterns.length === 0) continue;
    params[row.key] =
      row.mode === 'any' ? patterns : row.mode === 'and' ? { and: patterns } : { or: patterns };
  }
  return params;
}

/** Rows for stored params, in the API's key order; `label` (the other spelling) is read as labels. */
export function rowsOf(params: Partial<Record<string, ParamValue | undefined>>): RuleRow[] {
  const rows: RuleRow[] = [];
  for (const key of PARAM_KEYS) {
    const value = params[key] ?? (key === 'labels' ? params.label : undefined);
    if (!value) continue;
    if (Array.isArray(value)) rows.push({ key, mode: 'any', text: value.join(', ') });
    else if ('and' in value) rows.push({ key, mode: 'and', text: value.and.join(', ') });
    else rows.push({ key, mode: 'or', text: value.or.join(', ') });
  }
  return rows;
}

/** Whether any row has a pattern (a group with no param set holds no client). */
export const hasRule = (rows: readonly RuleRow[]): boolean => rows.some((r) => patternsOf(r.text).length > 0);

/** A key not used by a row yet, for a new row (the first when every key is used). */
export function nextFreeKey(rows: readonly RuleRow[]): ClientGroupParamKey {
  const used = new Set(rows.map((r) => r.key));
  return PARAM_KEYS.find((k) => !used.has(k)) ?? 'client_id';
}

/** One-line summary of the rule, as shown in the list of groups. */
export function describeRule(params: Partial<Record<string, ParamValue | undefined>>): string {
  const parts = rowsOf(params).map((row) => {
    const patterns = patternsOf(row.text);
    const joined = patterns.join(row.mode === 'and' ? ' and ' : ' or ');
    return `${row.key} ${patterns.length > 1 ? `(${joined})` : joined}`;
  });
  return parts.length > 0 ? parts.join(' AND ') : 'no rule: holds no client';
}
