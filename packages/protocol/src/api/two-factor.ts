import { z } from 'zod';
import { usernameSchema } from './names.js';

/** Body of POST /verify-2fa (spec 4.1): `token` is the one-time code, not a JWT. */
export const verifyTwoFaBodySchema = z.strictObject({
  username: usernameSchema,
  token: z.string().min(1, 'send the code that was delivered or shown by the app').max(64),
});
export type VerifyTwoFaBody = z.infer<typeof verifyTwoFaBodySchema>;

/** POST and GET /me/totp-secret (spec 2.5), not wrapped in `data`. */
export const totpSecretResponseSchema = z.object({
  secret: z.string(),
  /** Base64 PNG of the QR code of the `otpauth://` URI. */
  qr: z.string(),
});
export type TotpSecretResponse = z.infer<typeof totpSecretResponseSchema>;
