/**
 * A small HTTP client for svcd's API on keep-alive sockets (node:http, so the timing has little client overhead):
 * Basic login once, then Bearer requests, each bounded by a timeout and timed from send to last body byte.
 */
import { Agent, request } from 'node:http';

export interface ApiAnswer {
  status: number;
  body: string;
  /** From sending the request to the last byte of the answer. */
  ms: number;
}

export const REQUEST_TIMEOUT_MS = 10_000;

export class ApiClient {
  private readonly agent: Agent;
  private bearer: string | undefined;

  /** `base` is e.g. http://127.0.0.1:41234/api/v1; `sockets` caps the connections kept open. */
  constructor(
    readonly base: string,
    sockets = 8,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets });
  }

  /** GET with the Bearer token (when logged in); rejects on network errors and timeouts only. */
  get(path: string, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    return this.send('GET', path, undefined, headers);
  }

  /** A request with an optional JSON body and the Bearer token; rejects on network errors and timeouts only. */
  send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
    const url = new URL(`${this.base}${path}`);
    const auth = this.bearer ? { authorization: `Bearer ${this.bearer}` } : {};
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const type = payload === undefined ? {} : { 'content-type': 'application/json' };
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(
        url,
        { method, agent: this.agent, headers: { ...auth, ...type, ...headers }, timeout: REQUEST_TIMEOUT_MS },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.once('error', reject);
          res.once('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              ms: performance.now() - started,
            }),
          );
        },
      );
      req.once('timeout', () =>
        req.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)),
      );
      req.once('error', reject);
      req.end(payload);
    });
  }

  /** GET that must answer 200 with `{data: ...}`; returns the parsed body. */
  async getJson<T = unknown>(path: string): Promise<{ data: T; meta?: { count?: number } }> {
    const answer = await this.get(path);
    if (answer.status !== 200)
      throw new Error(`GET ${path}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    return JSON.parse(answer.body) as { data: T; meta?: { count?: number } };
  }

  /** Logs in with Basic credentials; later requests carry the token. */
  async login(user: string, password: string, lifetimeSeconds = 3600): Promise<void> {
    this.bearer = undefined;
    const basic = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    const answer = await this.get(`/login?token-lifetime=${lifetimeSeconds}`, { authorization: basic });
    const token = answer.status === 200 ? (JSON.parse(answer.body) as { data?: { token?: unknown } }) : {};
    if (typeof token.data?.token !== 'string')
      throw new Error(`login failed: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
    this.bearer = token.data.token;
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface StatusData {
  fingerprint: string;
  clients_connected: number;
  clients_disconnected: number;
  version: string;
}
