/** What a delivery sends: the code, where to, and how long it is valid (spec 5.3.6). */
export interface CodeMessage {
  username: string;
  sendTo: string;
  code: string;
  ttlSeconds: number;
  /** Who asked for the login, shown in the message so a user can spot a login that is not theirs. */
  requester: { ip: string; userAgent: string };
}

/** Sends a one-time code (SMTP, Pushover, an executable). Throws CodeDeliveryError when it did not go out. */
export interface CodeDelivery {
  /** `two_fa.delivery_method` of the login response: email, pushover or script. */
  readonly method: string;
  send(message: CodeMessage): Promise<void>;
}

/** A delivery that failed, with a reason an operator can act on (no secrets in it). */
export class CodeDeliveryError extends Error {
  constructor(reason: string, options?: ErrorOptions) {
    super(reason, options);
    this.name = 'CodeDeliveryError';
  }
}

/** A login waiting for its second factor, keyed by the login token's session. */
export interface PendingLogin {
  sessionId: string;
  username: string;
  /** Delivered-code mode: hash of the code; null in authenticator-app mode. */
  codeHash: string | null;
  codeExpiresAt: Date | null;
  attempts: number;
  /** `token-lifetime` asked for at /login, used for the auth token unless /verify-2fa asks again. */
  tokenLifetimeS: number | null;
  /** End of the login session (for purging). */
  expiresAt: Date;
}

/** Pending logins in the database, so any svcd node sharing it can verify them. */
export interface PendingLoginStore {
  create(login: PendingLogin): Promise<void>;
  find(sessionId: string): Promise<PendingLogin | undefined>;
  /** Counts one attempt; false when `limit` attempts were already made (or the login is gone). */
  countAttempt(sessionId: string, limit: number): Promise<boolean>;
  /** Removes the login; true only for the one call that removed it (a code is used once). */
  consume(sessionId: string): Promise<boolean>;
  purgeExpired(now: Date): Promise<number>;
}

export interface TotpSecretRecord {
  username: string;
  /** Base32 secret. */
  secret: string;
  /** Time step of the last accepted code, so a code is not accepted twice. */
  lastUsedStep: number | null;
  createdAt: Date;
}

/** Authenticator-app secrets, one per user, in svcd's database whatever the user store is. */
export interface TotpSecretStore {
  find(username: string): Promise<TotpSecretRecord | undefined>;
  /** False when the user already has a secret. */
  create(record: TotpSecretRecord): Promise<boolean>;
  /** False when there was none. */
  delete(username: string): Promise<boolean>;
  /** Records `step` as used; false when a step at or after it was used already (a replay). */
  markUsed(username: string, step: number): Promise<boolean>;
}

/** RFC 6238 TOTP: 30 s period, 6 digits, SHA-1. */
export interface TotpAlgorithm {
  newSecret(): string;
  /** The `otpauth://` URI an app reads from the QR code. */
  uri(secret: string, issuer: string, account: string): string;
  /** The time step of `code` if it matches at `at` or one step either side; undefined otherwise. */
  matchStep(secret: string, code: string, at: Date): number | undefined;
}

export interface QrEncoder {
  /** Base64 PNG of a QR code holding `text`. */
  png(text: string): Promise<string>;
}
