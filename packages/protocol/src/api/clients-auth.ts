import { z } from 'zod';

/** A client-auth id: the SSH user name of agents; `svc --auth id:password` splits at the first colon. */
export const clientAuthIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((s) => s.trim() === s, 'must not start or end with blanks')
  .refine(
    (s) => !s.includes(':'),
    'must not contain a colon (svc --auth splits id:password at the first one)',
  )
  // eslint-disable-next-line no-control-regex
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

export const createClientAuthBodySchema = z.strictObject({
  id: clientAuthIdSchema,
  password: z.string().min(8, 'must be at least 8 characters').max(100, 'must be at most 100 characters'),
});
export type CreateClientAuthBody = z.infer<typeof createClientAuthBodySchema>;

/** A client credential as GET /clients-auth returns it (spec 2.13): the password is shown as stored. */
export const clientCredentialSchema = z.object({ id: z.string(), password: z.string() });
export type ClientCredentialData = z.infer<typeof clientCredentialSchema>;
