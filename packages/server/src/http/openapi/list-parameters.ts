import type { ListSpec } from '@svc/protocol';

type Parameter = Record<string, unknown>;

const quoted = (names: readonly string[]) => names.join(', ');

/** The query parameters of the list grammar (list-query.ts) that one ListSpec allows. */
export function listParameters(spec: ListSpec): Parameter[] {
  const params: Parameter[] = [];
  if (spec.sortable.length > 0) {
    params.push({
      name: 'sort',
      in: 'query',
      description:
        `Sort keys, comma-separated or repeated; "-" before a key sorts descending. ` +
        `Keys: ${quoted(spec.sortable)}. Default: ${spec.defaultSort}.`,
      schema: { type: 'string' },
    });
  }
  for (const field of spec.filterable) {
    params.push({
      name: `filter[${field}]`,
      in: 'query',
      description:
        'Comma-separated values, any of which matches (case-insensitive, "*" is a wildcard). ' +
        'filter[a|b] matches in either field; filter[*] in any filterable field.',
      schema: { type: 'string' },
    });
  }
  if (spec.fields.length > 0) {
    const defaults = spec.defaultFields
      ? ` Default: ${quoted(spec.defaultFields)}.`
      : ' Default: every field.';
    params.push({
      name: `fields[${spec.resource}]`,
      in: 'query',
      description: `Comma-separated fields to return, of: ${quoted(spec.fields)}.${defaults}`,
      schema: { type: 'string' },
    });
  }
  if (spec.pagination) {
    const { defaultLimit, maxLimit } = spec.pagination;
    params.push(
      {
        name: 'page[limit]',
        in: 'query',
        description: `Items per page (default ${defaultLimit}).`,
        schema: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit },
      },
      {
        name: 'page[offset]',
        in: 'query',
        description: 'Items to skip.',
        schema: { type: 'integer', minimum: 0, default: 0 },
      },
    );
  }
  return params;
}
