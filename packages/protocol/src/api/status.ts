/** `data` of GET /status (spec 2.1). */
export interface StatusData {
  connect_url: string[];
  fingerprint: string;
  clients_connected: number;
  clients_disconnected: number;
  version: string;
}

/** `data` of GET /login (spec 2.4); two_fa stays null until two-factor login lands. */
export interface LoginData {
  token: string;
  two_fa: null;
}
