import { z } from 'zod';

export interface DataEnvelope<T> {
  data: T;
}

export interface ListEnvelope<T> {
  data: T[];
  meta: { count: number };
}

/** One element of `errors` in every error body. */
export const errorItemSchema = z.object({ code: z.string(), title: z.string(), detail: z.string() });

/** Every error answer of the API: `{"errors":[{code,title,detail}]}`. */
export const errorBodySchema = z.object({ errors: z.array(errorItemSchema).min(1) });
