/**
 * Which clients a group holds (spec 4.11 rules 1–5), as one pure function of the group's params and a client
 * record. Used by the group API, by multi-client commands (`group_ids`) and by `filter[groups]` on GET /clients.
 *
 * - Every pattern matches case-insensitively, `*` standing for any run of characters (list-query's wildcard).
 * - Every supplied (non-null) param must match; a group with no param set holds no client.
 * - A list of patterns, or `{or: [...]}`, matches when any client value matches any pattern; `{and: [...]}` when
 *   every pattern is matched by some client value. Single-valued fields are lists of one value.
 * - `labels` entries are `key:value`: blanks around the colon are ignored, the key compares exactly (ignoring
 *   case), the value with wildcards. Client labels whose key or value holds a colon are never matched.
 */
import {
  compileLowerCaseWildcard,
  foldCase,
  type ClientGroupParamKey,
  type ClientGroupParams,
  type ClientGroupParamValue,
} from '@svc/protocol';
import type { ClientRecord } from '../clients/client-record.js';

/** A client's matchable values, lower-cased: one list per param key (single-valued fields hold one value). */
export interface MatchView {
  readonly fields: Readonly<Record<FieldKey, readonly string[]>>;
  /** Labels whose key and value hold no colon. */
  readonly labels: readonly LowerLabel[];
}

/** Matches a client's view; compile once per group version, call once per client. */
export type GroupMatcher = (view: MatchView) => boolean;

type FieldKey = Exclude<ClientGroupParamKey, 'labels'>;

interface LowerLabel {
  key: string;
  value: string;
}

/** The record field each plain param reads. */
const FIELD_OF: Record<FieldKey, keyof ClientRecord> = {
  client_id: 'id',
  name: 'name',
  os: 'os',
  os_arch: 'os_arch',
  os_family: 'os_family',
  os_kernel: 'os_kernel',
  hostname: 'hostname',
  ipv4: 'ipv4',
  ipv6: 'ipv6',
  tag: 'tags',
  version: 'version',
  address: 'address',
  client_auth_id: 'client_auth_id',
};
const FIELD_KEYS = Object.keys(FIELD_OF) as FieldKey[];

/** Every record field a matcher reads. */
const MATCHED_FIELDS: readonly (keyof ClientRecord)[] = [...Object.values(FIELD_OF), 'labels'];

/**
 * Whether two versions of a record match the same groups because every field a matcher reads is the same value
 * or the same array/object (records are copied with their unchanged parts, e.g. when tunnels or the connection
 * state change). false may also mean "maybe different": the caller then matches again.
 */
export function sameMatchInput(a: ClientRecord, b: ClientRecord): boolean {
  for (const field of MATCHED_FIELDS) if (a[field] !== b[field]) return false;
  return true;
}

const lowerValues = (value: unknown): readonly string[] => {
  if (typeof value === 'string') return [foldCase(value)];
  if (Array.isArray(value)) return value.filter((v) => typeof v === 'string').map(foldCase);
  return [];
};

/** Views are kept per record object: records are replaced on every change, never mutated. */
const views = new WeakMap<ClientRecord, MatchView>();

/** The lower-cased values of a record, computed once per record version. */
export function matchView(record: ClientRecord): MatchView {
  let view = views.get(record);
  if (!view) {
    const fields = {} as Record<FieldKey, readonly string[]>;
    for (const key of FIELD_KEYS) fields[key] = lowerValues(record[FIELD_OF[key]]);
    const labels = Object.entries(record.labels)
      .filter(([key, value]) => !key.includes(':') && !value.includes(':'))
      .map(([key, value]) => ({ key: foldCase(key.trim()), value: foldCase(value.trim()) }));
    view = { fields, labels };
    views.set(record, view);
  }
  return view;
}

/** `key : value` → key and a matcher of the value; the schema has already refused other shapes. */
const compileLabelPattern = (entry: string): ((label: LowerLabel) => boolean) => {
  const colon = entry.indexOf(':');
  const key = foldCase(entry.slice(0, colon).trim());
  const value = compileLowerCaseWildcard(entry.slice(colon + 1).trim());
  return (label) => label.key === key && value(label.value);
};

const anyMatches = <T>(test: (value: T) => boolean, values: readonly T[]): boolean => {
  for (const value of values) if (test(value)) return true;
  return false;
};

/** Combines per-pattern tests over a client's values by the param's logic. */
function compileValue<T>(
  param: NonNullable<ClientGroupParamValue>,
  compilePattern: (pattern: string) => (value: T) => boolean,
): (values: readonly T[]) => boolean {
  const every = !Array.isArray(param) && 'and' in param;
  const patterns = Array.isArray(param) ? param : 'and' in param ? param.and : param.or;
  const tests = patterns.map(compilePattern);
  if (every) {
    return (values) => {
      for (const test of tests) if (!anyMatches(test, values)) return false;
      return true;
    };
  }
  return (values) => {
    for (const test of tests) if (anyMatches(test, values)) return true;
    return false;
  };
}

/** Compiles a group's params into one matcher (pure: no I/O, no clock). */
export function compileGroupParams(params: ClientGroupParams): GroupMatcher {
  const checks: GroupMatcher[] = [];
  for (const key of FIELD_KEYS) {
    const param = params[key];
    if (param === null) continue;
    const matches = compileValue<string>(param, compileLowerCaseWildcard);
    checks.push((view) => matches(view.fields[key]));
  }
  if (params.labels !== null) {
    const matches = compileValue<LowerLabel>(params.labels, compileLabelPattern);
    checks.push((view) => matches(view.labels));
  }
  if (checks.length === 0) return () => false;
  if (checks.length === 1) return checks[0] as GroupMatcher;
  return (view) => {
    for (const check of checks) if (!check(view)) return false;
    return true;
  };
}

/** Whether a client is in the group of these params (one-off; hot paths compile once and use matchView). */
export const isMember = (params: ClientGroupParams, record: ClientRecord): boolean =>
  compileGroupParams(params)(matchView(record));
