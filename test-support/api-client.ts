/** A small fetch wrapper for tests that talk to a real svcd over HTTP. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  json: any;
}

export type Auth = { basic: [string, string] } | { bearer: string } | { header: string } | undefined;

export interface RequestOptions {
  auth?: Auth;
  body?: unknown;
  /** Sent as is, for malformed-body tests. */
  rawBody?: string;
  contentType?: string;
}

export function basicHeader(username: string, password: string): string {
  return 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
}

export function createApiClient(baseUrl: string) {
  async function request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    const { auth } = options;
    if (auth && 'basic' in auth) headers.authorization = basicHeader(...auth.basic);
    if (auth && 'bearer' in auth) headers.authorization = `Bearer ${auth.bearer}`;
    if (auth && 'header' in auth) headers.authorization = auth.header;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const res = await fetch(baseUrl + path, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }
  return {
    request,
    get: (path: string, options?: RequestOptions) => request('GET', path, options),
    post: (path: string, body: unknown, options?: RequestOptions) =>
      request('POST', path, { ...options, body }),
    put: (path: string, body: unknown, options?: RequestOptions) =>
      request('PUT', path, { ...options, body }),
    delete: (path: string, options?: RequestOptions) => request('DELETE', path, options),
    async login(username: string, password: string, lifetime?: number): Promise<string> {
      const query = lifetime === undefined ? '' : `?token-lifetime=${lifetime}`;
      const res = await request('GET', `/login${query}`, { auth: { basic: [username, password] } });
      if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
      return (res.json as { data: { token: string } }).data.token;
    },
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;
