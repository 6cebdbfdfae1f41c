import type { Logger } from '@svc/platform';
import type { Authenticator } from './core/auth/authenticator.js';
import type { Clock } from './core/auth/ports.js';
import type { CodeDelivery } from './core/two-factor/ports.js';
import { sendToPolicy, type SendToPolicy } from './core/two-factor/send-to-policy.js';
import { TotpSecretsService } from './core/two-factor/totp-secrets-service.js';
import { TwoFactorService, type SecondFactor } from './core/two-factor/two-factor-service.js';
import type { UserRecord, UserStore } from './core/users/user-store.js';
import type { UserTwoFa } from '@svc/protocol';
import type { SvcdConfig } from './config/schema.js';
import { assertExecutable, executableDelivery } from './infra/two-factor/executable-delivery.js';
import { pushoverDelivery } from './infra/two-factor/pushover-delivery.js';
import { smtpDelivery } from './infra/two-factor/smtp-delivery.js';
import { otpauthTotp, pngQrEncoder } from './infra/two-factor/totp.js';
import { parseHostPort } from './config/schema.js';
import type { Database } from './storage/database.js';
import { SqlPendingLoginStore, SqlTotpSecretStore } from './storage/two-factor-repository.js';

/** How long one delivery may take before the login fails. */
const DELIVERY_TIMEOUT_MS = 10_000;

export interface SecondFactorParts {
  /** Set when a second factor is configured. */
  login: TwoFactorService | undefined;
  totp: TotpSecretsService;
  /** The rule the user API applies to two_fa_send_to (delivered codes only). */
  sendTo: SendToPolicy | undefined;
  /** A user's second-factor state as GET /users lists it. */
  stateOf: (user: UserRecord) => Promise<UserTwoFa>;
}

/** Wires two-factor login from `[api]`, `[smtp]` and `[pushover]`; fails the start on an unusable executable. */
export async function buildSecondFactor(
  config: SvcdConfig,
  deps: { auth: Authenticator; users: UserStore; database: Database; clock: Clock; logger: Logger },
): Promise<SecondFactorParts> {
  const { api } = config;
  const secrets = new SqlTotpSecretStore(deps.database);
  const totp = new TotpSecretsService({
    enabled: api.totp_enabled,
    secrets,
    algorithm: otpauthTotp,
    qr: pngQrEncoder,
    accountName: api.totp_account_name,
    findUser: (username) => deps.users.find(username),
    clock: deps.clock,
  });
  let factor: SecondFactor | undefined;
  let sendTo: SendToPolicy | undefined;
  let deliveryKind: string | undefined;
  if (api.totp_enabled) {
    factor = { kind: 'totp', secrets, algorithm: otpauthTotp };
  } else if (api.two_fa_token_delivery) {
    const delivery = await createDelivery(config, api.two_fa_token_delivery);
    const kind =
      delivery.method === 'email' ? 'smtp' : delivery.method === 'pushover' ? 'pushover' : 'executable';
    deliveryKind = kind;
    sendTo = sendToPolicy(kind, api.two_fa_send_to_type, api.two_fa_send_to_regex);
    factor = { kind: 'delivery', delivery, policy: sendTo, codeTtlMs: api.two_fa_token_ttl_seconds * 1000 };
  }
  const login =
    factor &&
    new TwoFactorService({
      auth: deps.auth,
      factor,
      pending: new SqlPendingLoginStore(deps.database),
      clock: deps.clock,
      loginSessionTtlMs: api.totp_login_session_ttl,
      onDeliveryFailure: (username, err) =>
        deps.logger.warn({ username, err }, 'two-factor code not delivered; the login failed'),
    });
  const stateOf = async (user: UserRecord): Promise<UserTwoFa> => {
    if (factor?.kind === 'totp')
      return { enabled: (await secrets.find(user.username)) !== undefined, method: 'totp_authenticator_app' };
    if (factor?.kind === 'delivery')
      return { enabled: (user.twoFaSendTo ?? '') !== '', method: deliveryKind ?? null };
    return { enabled: false, method: null };
  };
  return { login, totp, sendTo, stateOf };
}

async function createDelivery(config: SvcdConfig, delivery: string): Promise<CodeDelivery> {
  if (delivery === 'smtp') {
    const { smtp } = config;
    const server = parseHostPort(smtp.server ?? '');
    if (!server || !smtp.sender_email) throw new Error('[smtp] server and sender_email are required');
    return smtpDelivery({
      host: server.host,
      port: server.port,
      senderEmail: smtp.sender_email,
      secure: smtp.secure,
      timeoutMs: DELIVERY_TIMEOUT_MS,
      ...(smtp.auth_username ? { username: smtp.auth_username, password: smtp.auth_password ?? '' } : {}),
    });
  }
  if (delivery === 'pushover') {
    const { pushover } = config;
    if (!pushover.api_token) throw new Error('[pushover] api_token is required');
    return pushoverDelivery({
      apiToken: pushover.api_token,
      url: pushover.url,
      timeoutMs: DELIVERY_TIMEOUT_MS,
    });
  }
  await assertExecutable(delivery);
  return executableDelivery({
    path: delivery,
    timeoutMs: DELIVERY_TIMEOUT_MS,
    searchPath: process.env.PATH ?? '/usr/bin:/bin',
  });
}
