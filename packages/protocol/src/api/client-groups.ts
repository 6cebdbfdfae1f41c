/**
 * Client groups in the API (spec 2.11, 4.11): a group names the clients it holds by rules over their fields.
 *
 * A param value is a list of patterns (a client matches when any pattern matches), or `{and: [...]}` (every
 * pattern must match) or `{or: [...]}`; `*` is a wildcard, matching is case-insensitive. Unset params are null.
 * `label` is accepted as another spelling of `labels` and stored and returned as `labels`.
 */
import { z } from 'zod';
import { unknownKeyHints } from './key-hints.js';

export const CLIENT_GROUP_ID_MAX = 100;
export const CLIENT_GROUP_PATTERN_MAX = 256;
export const CLIENT_GROUP_DESCRIPTION_MAX = 1000;

/** Param keys in output order; `labels` holds `key:value` entries. */
export const CLIENT_GROUP_PARAM_KEYS = [
  'client_id',
  'name',
  'os',
  'os_arch',
  'os_family',
  'os_kernel',
  'hostname',
  'ipv4',
  'ipv6',
  'tag',
  'version',
  'address',
  'client_auth_id',
  'labels',
] as const;
export type ClientGroupParamKey = (typeof CLIENT_GROUP_PARAM_KEYS)[number];

/** Group ids go into URLs and comma-separated filters, so they keep to a plain alphabet. */
export const clientGroupIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(CLIENT_GROUP_ID_MAX, `must be at most ${CLIENT_GROUP_ID_MAX} characters`)
  .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters A-Z and a-z, digits, "_" and "-"');

const patternSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine(
    (s) => s.length <= CLIENT_GROUP_PATTERN_MAX,
    `must be at most ${CLIENT_GROUP_PATTERN_MAX} characters`,
  );

const patternsSchema = (pattern: z.ZodType<string>) =>
  z.array(pattern).min(1, 'must list at least one value; use null to leave the param unset');

/** `key:value`, blanks around the colon allowed, wildcards in the value only, no further colon. */
export const labelPatternSchema = patternSchema.superRefine((entry, ctx) => {
  const parts = entry.split(':');
  const problem =
    parts.length < 2
      ? 'must have the form key:value'
      : parts.length > 2
        ? 'must contain one colon only (labels whose key or value holds a colon cannot be matched)'
        : (parts[0] ?? '').trim() === ''
          ? 'must name a label key before the colon'
          : (parts[0] ?? '').includes('*')
            ? 'wildcards are allowed in the label value only, not in the key'
            : undefined;
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: entry });
});

const paramValueSchema = (pattern: z.ZodType<string>) =>
  z
    .union(
      [
        patternsSchema(pattern),
        z.strictObject({ and: patternsSchema(pattern) }),
        z.strictObject({ or: patternsSchema(pattern) }),
      ],
      { error: 'must be null, a list of strings, {"and": [strings]} or {"or": [strings]} (one key only)' },
    )
    .nullable()
    .default(null);

const plainValue = paramValueSchema(patternSchema);
const labelValue = paramValueSchema(labelPatternSchema);

/** A param as stored and returned: null (unset), patterns (any), or an and/or object. */
export type ClientGroupParamValue = z.output<typeof plainValue>;
export type ClientGroupParams = Record<ClientGroupParamKey, ClientGroupParamValue>;

export const clientGroupParamsSchema = z
  .strictObject(
    {
      client_id: plainValue,
      name: plainValue,
      os: plainValue,
      os_arch: plainValue,
      os_family: plainValue,
      os_kernel: plainValue,
      hostname: plainValue,
      ipv4: plainValue,
      ipv6: plainValue,
      tag: plainValue,
      version: plainValue,
      address: plainValue,
      client_auth_id: plainValue,
      labels: labelValue,
      label: labelValue,
    },
    { error: unknownKeyHints([...CLIENT_GROUP_PARAM_KEYS, 'label']) },
  )
  .superRefine((p, ctx) => {
    if (p.labels !== null && p.label !== null) {
      ctx.addIssue({
        code: 'custom',
        message: 'give labels or label (two spellings of one param), not both',
        path: ['label'],
        input: p.label,
      });
    }
  })
  .transform(({ label, ...rest }): ClientGroupParams => ({ ...rest, labels: rest.labels ?? label }));

/** Every param unset: such a group holds no client. */
export const EMPTY_CLIENT_GROUP_PARAMS: ClientGroupParams = Object.fromEntries(
  CLIENT_GROUP_PARAM_KEYS.map((k) => [k, null]),
) as ClientGroupParams;

const descriptionSchema = z
  .string()
  .max(CLIENT_GROUP_DESCRIPTION_MAX, `must be at most ${CLIENT_GROUP_DESCRIPTION_MAX} characters`)
  .default('');

export const createClientGroupBodySchema = z.strictObject({
  id: clientGroupIdSchema,
  description: descriptionSchema,
  params: clientGroupParamsSchema.default(EMPTY_CLIENT_GROUP_PARAMS),
});
export type CreateClientGroupBody = z.output<typeof createClientGroupBodySchema>;

/** PUT replaces description and params; `id` may be left out, and when given must be the one in the path. */
export const updateClientGroupBodySchema = createClientGroupBodySchema.extend({
  id: clientGroupIdSchema.optional(),
});
export type UpdateClientGroupBody = z.output<typeof updateClientGroupBodySchema>;

const patternsOut = z.array(z.string());
const paramValueOut = z
  .union([patternsOut, z.object({ and: patternsOut }), z.object({ or: patternsOut })])
  .nullable();

/** A group as GET returns it; `client_ids` etc. are computed from the live client records. */
export const clientGroupSchema = z.object({
  id: z.string(),
  description: z.string(),
  params: z.object(
    Object.fromEntries(CLIENT_GROUP_PARAM_KEYS.map((key) => [key, paramValueOut])) as Record<
      ClientGroupParamKey,
      typeof paramValueOut
    >,
  ),
  /** Ids of the member clients known to svcd (connected or not), sorted like GET /clients. */
  client_ids: z.array(z.string()),
  num_clients: z.number().int(),
  num_clients_connected: z.number().int(),
});
export type ClientGroup = z.infer<typeof clientGroupSchema>;

export const CLIENT_GROUP_FIELDS = [
  'id',
  'description',
  'params',
  'client_ids',
  'num_clients',
  'num_clients_connected',
] as const satisfies readonly (keyof ClientGroup)[];

/** How many matching clients a preview lists (it counts them all). */
export const CLIENT_GROUP_PREVIEW_LIMIT = 100;

/** POST /client-groups-preview: the params of a group not saved (yet), to see which clients they would hold. */
export const clientGroupPreviewBodySchema = z.strictObject({
  params: clientGroupParamsSchema,
});
export type ClientGroupPreviewBody = z.output<typeof clientGroupPreviewBodySchema>;

/** The answer of a preview: every member counted, the first ones (in GET /clients order) listed. */
export const clientGroupPreviewSchema = z.object({
  num_clients: z.number().int(),
  num_clients_connected: z.number().int(),
  /** The first CLIENT_GROUP_PREVIEW_LIMIT members. */
  clients: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      hostname: z.string(),
      connection_state: z.enum(['connected', 'disconnected']),
    }),
  ),
});
export type ClientGroupPreview = z.infer<typeof clientGroupPreviewSchema>;
