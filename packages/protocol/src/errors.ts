/**
 * Error kinds are what the HTTP layer maps to a status (one table, in server/http/error-status.ts).
 * Codes are stable strings clients may switch on; titles are for people.
 */
export const ERROR_KINDS = [
  'invalid',
  'unauthenticated',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'timeout',
  'conflict',
  'gone',
  'too_large',
  'headers_too_large',
  'banned',
  'throttled',
  'unavailable',
  'internal',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

export const ERROR_CODES = {
  invalidJson: 'ERR_INVALID_JSON',
  missingBody: 'ERR_MISSING_BODY',
  invalidRequest: 'ERR_INVALID_REQUEST',
  invalidQuery: 'ERR_INVALID_QUERY',
  malformedHttp: 'ERR_MALFORMED_HTTP',
  requestTimeout: 'ERR_REQUEST_TIMEOUT',
  headersTooLarge: 'ERR_HEADERS_TOO_LARGE',
  bodyTooLarge: 'ERR_BODY_TOO_LARGE',
  unsupportedMediaType: 'ERR_UNSUPPORTED_MEDIA_TYPE',
  authRequired: 'ERR_AUTH_REQUIRED',
  badCredentials: 'ERR_BAD_CREDENTIALS',
  badToken: 'ERR_BAD_TOKEN',
  loginThrottled: 'ERR_LOGIN_THROTTLED',
  tooManyRequests: 'ERR_TOO_MANY_REQUESTS',
  ipBanned: 'ERR_IP_BANNED',
  adminRequired: 'ERR_ADMIN_REQUIRED',
  /** A route's named permission (issue 28) that none of the caller's user groups grants. */
  permissionRequired: 'ERR_PERMISSION_REQUIRED',
  /** The user-group API needs database user tables with [api] group_details_table. */
  groupPermissionsOff: 'ERR_GROUP_PERMISSIONS_OFF',
  /** Administrators always has every permission; its group cannot be changed or deleted. */
  administratorsGroupFixed: 'ERR_ADMINISTRATORS_GROUP_FIXED',
  staticUserStore: 'ERR_STATIC_USER_STORE',
  userNotFound: 'ERR_USER_NOT_FOUND',
  userExists: 'ERR_USER_EXISTS',
  lastAdministrator: 'ERR_LAST_ADMINISTRATOR',
  nothingToChange: 'ERR_NOTHING_TO_CHANGE',
  clientAuthNotFound: 'ERR_CLIENT_AUTH_NOT_FOUND',
  clientAuthExists: 'ERR_CLIENT_AUTH_EXISTS',
  clientAuthReadOnly: 'ERR_CLIENT_AUTH_READ_ONLY',
  clientAuthSingle: 'ERR_CLIENT_AUTH_SINGLE',
  clientAuthInUse: 'ERR_CLIENT_AUTH_IN_USE',
  clientAuthNotConfigured: 'ERR_CLIENT_AUTH_NOT_CONFIGURED',
  routeNotFound: 'ERR_ROUTE_NOT_FOUND',
  methodNotAllowed: 'ERR_METHOD_NOT_ALLOWED',
  storageUnavailable: 'ERR_STORAGE_UNAVAILABLE',
  shuttingDown: 'ERR_SHUTTING_DOWN',
  internal: 'ERR_INTERNAL',
  clientNotFound: 'ERR_CLIENT_NOT_FOUND',
  clientConnected: 'ERR_CLIENT_CONNECTED',
  upgradeRequired: 'ERR_UPGRADE_REQUIRED',
  agentProtocol: 'ERR_AGENT_PROTOCOL',
  serverBusy: 'ERR_SERVER_BUSY',
  clientNotConnected: 'ERR_CLIENT_NOT_CONNECTED',
  invalidAcl: 'ERR_INVALID_ACL',
  tunnelExists: 'ERR_TUNNEL_EXISTS',
  tunnelNotFound: 'ERR_TUNNEL_NOT_FOUND',
  tunnelBusy: 'ERR_TUNNEL_BUSY',
  tunnelNotAllowed: 'ERR_TUNNEL_NOT_ALLOWED',
  tunnelFailed: 'ERR_TUNNEL_FAILED',
  remotePortClosed: 'ERR_REMOTE_PORT_CLOSED',
  localPortNotAllowed: 'ERR_LOCAL_PORT_NOT_ALLOWED',
  localPortInUse: 'ERR_LOCAL_PORT_IN_USE',
  noFreePort: 'ERR_NO_FREE_PORT',
  jobNotFound: 'ERR_JOB_NOT_FOUND',
  multiJobNotFound: 'ERR_MULTI_JOB_NOT_FOUND',
  clientGroupNotFound: 'ERR_CLIENT_GROUP_NOT_FOUND',
  noTargets: 'ERR_NO_TARGETS',
  nothingToRerun: 'ERR_NOTHING_TO_RERUN',
  /** A rerun of a run whose env had plain values, which svcd does not keep. */
  rerunEnvNotKept: 'ERR_RERUN_ENV_NOT_KEPT',
  /** Cancel of a job or run that has ended (issue 27). */
  jobEnded: 'ERR_JOB_ENDED',
  /** A running job whose agent cannot be asked to stop it (not connected, or too old). */
  jobNotCancellable: 'ERR_JOB_NOT_CANCELLABLE',
  foreignOrigin: 'ERR_FOREIGN_ORIGIN',
  uriSchemeTooLong: 'ERR_URI_SCHEME_TOO_LONG',
  libraryScriptNotFound: 'ERR_LIBRARY_SCRIPT_NOT_FOUND',
  libraryScriptExists: 'ERR_LIBRARY_SCRIPT_EXISTS',
  vaultNotInitialized: 'ERR_VAULT_NOT_INITIALIZED',
  vaultAlreadyInitialized: 'ERR_VAULT_ALREADY_INITIALIZED',
  vaultLocked: 'ERR_VAULT_LOCKED',
  vaultAlreadyUnlocked: 'ERR_VAULT_ALREADY_UNLOCKED',
  vaultWrongPassword: 'ERR_VAULT_WRONG_PASSWORD',
  vaultEntryNotFound: 'ERR_VAULT_ENTRY_NOT_FOUND',
  vaultEntryExists: 'ERR_VAULT_ENTRY_EXISTS',
  vaultGroupRequired: 'ERR_VAULT_GROUP_REQUIRED',
  clientGroupExists: 'ERR_CLIENT_GROUP_EXISTS',
  secondFactorRequired: 'ERR_SECOND_FACTOR_REQUIRED',
  loginTokenOnly: 'ERR_LOGIN_TOKEN_ONLY',
  loginTokenRequired: 'ERR_LOGIN_TOKEN_REQUIRED',
  twoFaDisabled: 'ERR_TWO_FA_DISABLED',
  twoFaSendToMissing: 'ERR_TWO_FA_SEND_TO_MISSING',
  twoFaSendToInvalid: 'ERR_TWO_FA_SEND_TO_INVALID',
  twoFaDeliveryFailed: 'ERR_TWO_FA_DELIVERY_FAILED',
  twoFaCodeWrong: 'ERR_TWO_FA_CODE_WRONG',
  twoFaCodeExpired: 'ERR_TWO_FA_CODE_EXPIRED',
  twoFaTooManyAttempts: 'ERR_TWO_FA_TOO_MANY_ATTEMPTS',
  totpDisabled: 'ERR_TOTP_DISABLED',
  totpSecretExists: 'ERR_TOTP_SECRET_EXISTS',
  totpSecretMissing: 'ERR_TOTP_SECRET_MISSING',
  verifiedTokenRequired: 'ERR_VERIFIED_TOKEN_REQUIRED',
  apiTokenNotFound: 'ERR_API_TOKEN_NOT_FOUND',
  apiTokenExists: 'ERR_API_TOKEN_EXISTS',
  apiTokenExpired: 'ERR_API_TOKEN_EXPIRED',
  apiTokenScope: 'ERR_API_TOKEN_SCOPE',
  savedViewNotFound: 'ERR_SAVED_VIEW_NOT_FOUND',
  savedViewExists: 'ERR_SAVED_VIEW_EXISTS',
  savedViewLimit: 'ERR_SAVED_VIEW_LIMIT',
  oldPasswordRequired: 'ERR_OLD_PASSWORD_REQUIRED',
  wrongOldPassword: 'ERR_WRONG_OLD_PASSWORD',
  delegatedUserUnknown: 'ERR_DELEGATED_USER_UNKNOWN',
  gone: 'ERR_GONE',
  scheduleNotFound: 'ERR_SCHEDULE_NOT_FOUND',
  clientsOutOfScope: 'ERR_CLIENTS_OUT_OF_SCOPE',
  commandRestricted: 'ERR_COMMAND_RESTRICTED',
  tunnelRestricted: 'ERR_TUNNEL_RESTRICTED',
  invalidGroupPolicy: 'ERR_INVALID_GROUP_POLICY',
  storedGroupPolicyInvalid: 'ERR_STORED_GROUP_POLICY_INVALID',
  clusterBusUnavailable: 'ERR_CLUSTER_BUS_UNAVAILABLE',
  databaseUnavailable: 'ERR_DATABASE_UNAVAILABLE',
} as const;
export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** One item of the `errors` array of an error response. */
export interface ErrorItem {
  code: string;
  title: string;
  detail: string;
}

export interface ErrorBody {
  errors: ErrorItem[];
}

/** An error the service expects and can explain: carries a kind (→ HTTP status) and a stable code. */
export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly detail: string;
  /** Further items for validation errors that found several problems at once. */
  readonly extra: ErrorItem[];

  constructor(kind: ErrorKind, code: string, title: string, detail = '', extra: ErrorItem[] = []) {
    super(title);
    this.name = 'AppError';
    this.kind = kind;
    this.code = code;
    this.detail = detail;
    this.extra = extra;
  }

  toItems(): ErrorItem[] {
    return [{ code: this.code, title: this.message, detail: this.detail }, ...this.extra];
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;
