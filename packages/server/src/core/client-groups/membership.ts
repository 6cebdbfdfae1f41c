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
  type ClientGroupParamKey,
  type ClientGroupParams,
  type ClientGroupParamValue,
} from '@svc/protocol';
import type { ClientRecord } from '../clients/client-record.js';

/** Matches a client; compile once per group version, call once per client. */
export type GroupMatcher = (record: ClientRecord) => boolean;

type FieldKey = Exclude<ClientGroupParamKey, 'labels'>;

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

/** A record's matchable values, lower-cased once per record object (records are replaced, never mutated). */
interface LowerView {
  fields: Partial<Record<FieldKey, readonly string[]>>;
  labels?: readonly LowerLabel[];
}

interface LowerLabel {
  key: string;
  value: string;
}

const views = new WeakMap<ClientRecord, LowerView>();

const viewOf = (record: ClientRecord): LowerView => {
  let view = views.get(record);
  if (!view) {
    view = { fields: {} };
    views.set(record, view);
  }
  return view;
};

const lowerValues = (value: unknown): readonly string[] => {
  if (typeof value === 'string') return [value.toLowerCase()];
  if (Array.isArray(value)) return value.filter((v) => typeof v === 'string').map((v) => v.toLowerCase());
  return [];
};

const fieldValues = (record: ClientRecord, key: FieldKey): readonly string[] => {
  const view = viewOf(record);
  let values = view.fields[key];
  if (values === undefined) {
    values = lowerValues(record[FIELD_OF[key]]);
    view.fields[key] = values;
  }
  return values;
};

const labelValues = (record: ClientRecord): readonly LowerLabel[] => {
  const view = viewOf(record);
  if (view.labels === undefined) {
    view.labels = Object.entries(record.labels)
      .filter(([key, value]) => !key.includes(':') && !value.includes(':'))
      .map(([key, value]) => ({ key: key.trim().toLowerCase(), value: value.trim().toLowerCase() }));
  }
  return view.labels;
};

/** `key : value` → key and a matcher of the value; the schema has already refused other shapes. */
const compileLabelPattern = (entry: string): ((label: LowerLabel) => boolean) => {
  const colon = entry.indexOf(':');
  const key = entry.slice(0, colon).trim().toLowerCase();
  const value = compileLowerCaseWildcard(entry.slice(colon + 1).trim());
  return (label) => label.key === key && value(label.value);
};

/** Combines per-pattern tests over a client's values by the param's logic. */
function compileValue<T>(
  param: NonNullable<ClientGroupParamValue>,
  compilePattern: (pattern: string) => (value: T) => boolean,
): (values: readonly T[]) => boolean {
  const every = !Array.isArray(param) && 'and' in param;
  const patterns = Array.isArray(param) ? param : 'and' in param ? param.and : param.or;
  const tests = patterns.map(compilePattern);
  const hit = (test: (value: T) => boolean, values: readonly T[]) => values.some(test);
  return every
    ? (values) => tests.every((test) => hit(test, values))
    : (values) => tests.some((test) => hit(test, values));
}

/** Compiles a group's params into one matcher (pure: no I/O, no clock). */
export function compileGroupParams(params: ClientGroupParams): GroupMatcher {
  const checks: GroupMatcher[] = [];
  for (const key of Object.keys(FIELD_OF) as FieldKey[]) {
    const param = params[key];
    if (param === null) continue;
    const matches = compileValue<string>(param, compileLowerCaseWildcard);
    checks.push((record) => matches(fieldValues(record, key)));
  }
  if (params.labels !== null) {
    const matches = compileValue<LowerLabel>(params.labels, compileLabelPattern);
    checks.push((record) => matches(labelValues(record)));
  }
  if (checks.length === 0) return () => false;
  return (record) => {
    for (const check of checks) if (!check(record)) return false;
    return true;
  };
}
