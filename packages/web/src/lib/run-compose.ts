/**
 * The compose form of a multi-client run (/runs/new): its search params (so other pages can link to a
 * pre-filled form), the request body it sends and the GET /clients query that counts the clients it targets.
 */
import type { StagedOptions } from './staged-run.js';

export type TargetKind = 'ids' | 'tags' | 'labels';
export type Operator = 'OR' | 'AND';
export type ScriptSource = 'command' | 'script' | 'library';

/** What /runs/new accepts in its URL; every field optional. Lists are comma-separated. */
export interface ComposeSearch {
  client_ids?: string;
  group_ids?: string;
  tags?: string;
  labels?: string;
  operator?: Operator;
  command?: string;
  script_id?: string;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== ''
    ? value
    : Array.isArray(value)
      ? value.join(',')
      : undefined;

export function parseComposeSearch(raw: Record<string, unknown>): ComposeSearch {
  const search: ComposeSearch = {};
  for (const key of ['client_ids', 'group_ids', 'tags', 'labels', 'command', 'script_id'] as const) {
    const value = text(raw[key]);
    if (value !== undefined) search[key] = value;
  }
  const operator = typeof raw.operator === 'string' ? raw.operator.toUpperCase() : undefined;
  if (operator === 'AND' || operator === 'OR') search.operator = operator;
  return search;
}

/** `a, b,,c` → ['a','b','c']: blanks trimmed, empties and duplicates dropped. */
export function splitList(value: string): string[] {
  return [
    ...new Set(
      value
        .split(/[,\n]/)
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
}

export interface Targets {
  kind: TargetKind;
  clientIds: string;
  groupIds: string;
  tags: string;
  labels: string;
  operator: Operator;
}

export function initialTargets(search: ComposeSearch): Targets {
  const kind: TargetKind = search.tags ? 'tags' : search.labels ? 'labels' : 'ids';
  return {
    kind,
    clientIds: search.client_ids ?? '',
    groupIds: search.group_ids ?? '',
    tags: search.tags ?? '',
    labels: search.labels ?? '',
    operator: search.operator ?? 'OR',
  };
}

/** The targeting fields of POST /commands and /scripts, or undefined while nothing is targeted. */
export function targetingBody(targets: Targets): Record<string, unknown> | undefined {
  if (targets.kind === 'tags') {
    const tags = splitList(targets.tags);
    return tags.length ? { tags: { operator: targets.operator, tags } } : undefined;
  }
  if (targets.kind === 'labels') {
    const labels = splitList(targets.labels);
    return labels.length ? { labels: { operator: targets.operator, labels } } : undefined;
  }
  const clientIds = splitList(targets.clientIds);
  const groupIds = splitList(targets.groupIds);
  if (!clientIds.length && !groupIds.length) return undefined;
  return {
    ...(clientIds.length ? { client_ids: clientIds } : {}),
    ...(groupIds.length ? { group_ids: groupIds } : {}),
  };
}

/** `env : prod` → `env: prod`, the form GET /clients filters labels on. */
export const labelFilterValue = (label: string): string => {
  const colon = label.indexOf(':');
  return colon < 0 ? label.trim() : `${label.slice(0, colon).trim()}: ${label.slice(colon + 1).trim()}`;
};

/**
 * The GET /clients query counting the clients a targeting matches (page[limit]=1: only meta.count is used).
 * OR is one filter with several values; AND one filter per value. ids and groups combine as a union, as a run
 * resolves them. List values containing a comma cannot be expressed and are left out.
 */
export function targetCountQuery(targets: Targets): URLSearchParams | undefined {
  const body = targetingBody(targets);
  if (!body) return undefined;
  const query = new URLSearchParams({ 'fields[clients]': 'id', 'page[limit]': '1' });
  const add = (field: string, values: string[]) => {
    if (targets.operator === 'AND') for (const v of values) query.append(`filter[${field}]`, v);
    else query.append(`filter[${field}]`, values.join(','));
  };
  if (targets.kind === 'tags') add('tags', splitList(targets.tags));
  else if (targets.kind === 'labels') add('labels', splitList(targets.labels).map(labelFilterValue));
  else {
    const ids = splitList(targets.clientIds);
    const groups = splitList(targets.groupIds);
    const field = ids.length && groups.length ? 'id|groups' : ids.length ? 'id' : 'groups';
    query.append(`filter[${field}]`, [...ids, ...groups].join(','));
  }
  return query;
}

/**
 * What the run form and the schedule form share, as typed: what to run (a command, a typed script or a library
 * script) and how (interpreter, directory, timeout, concurrency, stop at a failure, batches).
 */
export interface RunWhat {
  source: ScriptSource;
  command: string;
  script: string;
  scriptId: string;
  interpreter: string;
  cwd: string;
  /** '' (schedule form) leaves it out: 60 s, or a library script's own. */
  timeoutSec: number | string;
  concurrent: boolean;
  abortOnError: boolean;
  staged: StagedOptions;
}

export interface RunOptions {
  interpreter: string;
  cwd: string;
  timeoutSec: number;
  concurrent: boolean;
  abortOnError: boolean;
}

/** UTF-8 text as standard base64 (what POST /scripts takes). */
export function toBase64(textValue: string): string {
  const bytes = new TextEncoder().encode(textValue);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Where to POST and what: a command, a typed script, or a library script by id. */
export function runRequest(
  source: ScriptSource,
  content: { command: string; script: string; scriptId: string },
  options: RunOptions,
  targeting: Record<string, unknown>,
): { path: '/commands' | '/scripts'; body: Record<string, unknown> } {
  const common = {
    ...targeting,
    execute_concurrently: options.concurrent,
    abort_on_error: options.abortOnError,
  };
  const run = {
    timeout_sec: options.timeoutSec,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.interpreter ? { interpreter: options.interpreter } : {}),
  };
  if (source === 'command')
    return { path: '/commands', body: { command: content.command, ...run, ...common } };
  if (source === 'script')
    return { path: '/scripts', body: { script: toBase64(content.script), ...run, ...common } };
  // A library script keeps its own options unless the form changed them.
  return { path: '/scripts', body: { script_id: content.scriptId, ...run, ...common } };
}
