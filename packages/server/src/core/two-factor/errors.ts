import { AppError, ERROR_CODES } from '@svc/protocol';

/** The errors of two-factor login and the TOTP secret API, each with its kind (→ status) and stable code. */
export const twoFactorErrors = {
  disabled: () =>
    new AppError(
      'conflict',
      ERROR_CODES.twoFaDisabled,
      'Two-factor login is not enabled',
      'set [api] two_fa_token_delivery or totp_enabled; GET /login then returns a token that /verify-2fa accepts',
    ),
  loginTokenRequired: () =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.loginTokenRequired,
      '/verify-2fa needs the login token returned by GET /login',
      'send Authorization: Bearer <login token>; an auth token has passed the second factor already',
    ),
  usernameMismatch: () =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.twoFaCodeWrong,
      'The username is not the one of the login token',
    ),
  sendToMissing: (username: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.twoFaSendToMissing,
      `User '${username}' has no two_fa_send_to, so no login code can be sent`,
      'an administrator must set two_fa_send_to for this user (PUT /users/{username})',
    ),
  sendToInvalid: (username: string, problem: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.twoFaSendToInvalid,
      `User '${username}' has an unusable two_fa_send_to: ${problem}`,
      'an administrator must correct two_fa_send_to for this user (PUT /users/{username})',
    ),
  deliveryFailed: (reason: string) =>
    new AppError(
      'unavailable',
      ERROR_CODES.twoFaDeliveryFailed,
      'The login code could not be sent',
      `${reason}; log in again, and tell an administrator if it keeps failing`,
    ),
  codeWrong: () =>
    new AppError('unauthenticated', ERROR_CODES.twoFaCodeWrong, 'Wrong code', 'check the code and try again'),
  codeUsed: () =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.twoFaCodeWrong,
      'This login was completed or ended already',
      'log in again with GET /login',
    ),
  codeExpired: () =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.twoFaCodeExpired,
      'The code has expired',
      'log in again with GET /login to get a new code',
    ),
  tooManyAttempts: (limit: number) =>
    new AppError(
      'unauthenticated',
      ERROR_CODES.twoFaTooManyAttempts,
      `Too many wrong codes (${limit}) for this login`,
      'log in again with GET /login',
    ),
  totpDisabled: () =>
    new AppError(
      'invalid',
      ERROR_CODES.totpDisabled,
      'Authenticator-app login is not enabled',
      'the TOTP secret endpoints need [api] totp_enabled = true',
    ),
  secretExists: () =>
    new AppError(
      'conflict',
      ERROR_CODES.totpSecretExists,
      'A TOTP secret exists already; only one can be generated',
      'if it is lost, delete it (DELETE /me/totp-secret with an auth token, or an administrator) and create a new one',
    ),
  secretMissing: () =>
    new AppError(
      'not_found',
      ERROR_CODES.totpSecretMissing,
      'No TOTP secret exists for this user',
      'create one with POST /me/totp-secret (the login token of GET /login may do that)',
    ),
  secretNeededToVerify: () =>
    new AppError(
      'conflict',
      ERROR_CODES.totpSecretMissing,
      'No TOTP secret exists for this user yet',
      'create one with POST /me/totp-secret using the login token, add it to the app, then send its code',
    ),
  verifiedTokenRequired: () =>
    new AppError(
      'forbidden',
      ERROR_CODES.verifiedTokenRequired,
      "Removing another user's TOTP secret needs a 2FA-verified token",
      'log in with GET /login and POST /verify-2fa and send the Bearer token it returns',
    ),
};
