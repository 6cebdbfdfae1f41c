import { expect, test } from 'vitest';
import * as z from 'zod/mini';
import '../src/zod-english.js';

// This file loads zod/mini alone, as the agent bundle does: without zod-english its issues say "Invalid input".
test('zod/mini issues carry the English messages', () => {
  const result = z.safeParse(z.object({ id: z.string().check(z.minLength(2)), n: z.int() }), {
    id: 'a',
    n: 'x',
  });
  expect(result.error?.issues.map((issue) => issue.message)).toEqual([
    'Too small: expected string to have >=2 characters',
    'Invalid input: expected number, received string',
  ]);
});
