/** Describes a parsed config value for an error message, without echoing secrets. */
export function describeValue(value: unknown, hidden = false): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    if (hidden) return 'a string (value hidden)';
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return `string ${JSON.stringify(shown)}`;
  }
  if (typeof value === 'number' || typeof value === 'boolean')
    return hidden ? typeof value : `${typeof value} ${value}`;
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return 'a date';
  if (typeof value === 'object') return 'a table';
  return typeof value;
}
