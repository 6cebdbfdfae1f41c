/** `data` of GET /status (spec 2.1). */
export interface StatusData {
  connect_url: string[];
  fingerprint: string;
  clients_connected: number;
  clients_disconnected: number;
  version: string;
}

/** `two_fa` of the login response (spec 2.4): where the code went, or the authenticator-app state. */
export interface TwoFaInfo {
  send_to: string;
  delivery_method: string;
  /** Authenticator-app mode: `pending` (no secret yet) or `exists`; empty for delivered codes. */
  totp_key_status: '' | 'pending' | 'exists';
}

/** `data` of GET /login and POST /verify-2fa (spec 2.4); two_fa is null once no second factor is due. */
export interface LoginData {
  token: string;
  two_fa: TwoFaInfo | null;
}
