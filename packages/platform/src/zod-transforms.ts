import * as z from 'zod/mini';

/**
 * Records why `input` is invalid from inside a zod transform and returns zod's NEVER. Works with zod/mini's
 * transform context (a parse payload) and classic zod's, which extends it.
 */
export function rejectValue(ctx: z.core.ParsePayload, input: unknown, message: string): never {
  ctx.issues.push({ code: 'custom', input, message });
  return z.NEVER;
}

/** A string checked by a parser that throws with a message; the output is the parser's result. */
export function parsedString<T>(parse: (text: string) => T) {
  return z.pipe(
    z.string(),
    z.transform((text: string, ctx) => {
      try {
        return parse(text);
      } catch (error) {
        return rejectValue(ctx, text, (error as Error).message);
      }
    }),
  );
}
