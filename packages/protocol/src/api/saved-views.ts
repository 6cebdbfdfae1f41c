import { z } from 'zod';

/** Pages a saved view can belong to. */
export const SAVED_VIEW_PAGES = ['clients'] as const;
export const savedViewPageSchema = z.enum(SAVED_VIEW_PAGES, {
  error: `must be one of ${SAVED_VIEW_PAGES.map((p) => `"${p}"`).join(', ')}`,
});
export type SavedViewPage = z.infer<typeof savedViewPageSchema>;

export const SAVED_VIEW_NAME_MAX = 100;
export const SAVED_VIEW_SEARCH_MAX = 4000;
export const SAVED_VIEW_COLUMNS_MAX = 40;
export const SAVED_VIEW_COLUMN_MAX = 64;
export const SAVED_VIEW_SORT_MAX = 200;
/** Views one user may keep. */
export const SAVED_VIEWS_PER_USER = 200;

const nameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(SAVED_VIEW_NAME_MAX, `must be at most ${SAVED_VIEW_NAME_MAX} characters`);

/** The page's URL search string without the leading `?`, e.g. `state=connected&tags=linux`. */
const searchSchema = z
  .string()
  .max(SAVED_VIEW_SEARCH_MAX, `must be at most ${SAVED_VIEW_SEARCH_MAX} characters`)
  .refine((s) => !s.startsWith('?') && !/[\s#]/.test(s), {
    message: 'must be a URL query string without "?", "#" or white space',
  });

const columnsSchema = z
  .array(
    z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'each column must be 1-64 letters, digits, "_", "." or "-"'),
  )
  .max(SAVED_VIEW_COLUMNS_MAX, `must have at most ${SAVED_VIEW_COLUMNS_MAX} columns`)
  .refine((cols) => new Set(cols).size === cols.length, { message: 'must not repeat a column' });

/** Sort fields, comma-separated, `-` before a field for descending; empty = the page's default. */
const sortSchema = z
  .string()
  .max(SAVED_VIEW_SORT_MAX, `must be at most ${SAVED_VIEW_SORT_MAX} characters`)
  .regex(
    /^(-?[A-Za-z0-9_.]+(,-?[A-Za-z0-9_.]+)*)?$/,
    'must be fields separated by commas, "-" for descending',
  );

export const createSavedViewBodySchema = z.strictObject({
  name: nameSchema,
  page: savedViewPageSchema,
  search: searchSchema.default(''),
  columns: columnsSchema.default([]),
  sort: sortSchema.default(''),
});
export type CreateSavedViewBody = z.infer<typeof createSavedViewBodySchema>;

export const updateSavedViewBodySchema = z.strictObject({
  name: nameSchema.optional(),
  search: searchSchema.optional(),
  columns: columnsSchema.optional(),
  sort: sortSchema.optional(),
});
export type UpdateSavedViewBody = z.infer<typeof updateSavedViewBodySchema>;

/** A saved view: a named filter, columns and sort of a console page, kept per user. */
export const savedViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  page: savedViewPageSchema,
  search: z.string(),
  columns: z.array(z.string()),
  sort: z.string(),
  /** RFC 3339. */
  created_at: z.string(),
  updated_at: z.string(),
});
export type SavedView = z.infer<typeof savedViewSchema>;
