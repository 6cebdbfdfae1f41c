import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ConfigError } from '@svc/platform';
import { SettingError } from '@svc/platform';
import { basicHeader } from '../../../../test-support/api-client.js';
import { makeTestCertificates, type TestCertificates } from '../../../../test-support/certificates.js';
import { ADMIN, startTestServer, type TestServer } from '../../../../test-support/server.js';
import { parseSvcdConfig, svcdConfigSchema } from '../../src/config/schema.js';
import { resolveConfigPaths } from '../../src/cli/resolve-paths.js';
import { startServer } from '../../src/server.js';

let dir: string;
let certs: TestCertificates;
let otherCa: TestCertificates;
let ca: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svcd-https-'));
  certs = await makeTestCertificates(dir, 'api');
  otherCa = await makeTestCertificates(dir, 'other');
  ca = await readFile(certs.caCert, 'utf8');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Reply {
  status: number;
  body: string;
  protocol: string;
}

/** GET over HTTPS trusting only the test CA (or what `tls` says). */
function httpsGet(
  url: string,
  headers: Record<string, string>,
  tls: RequestOptions = { ca },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { headers, ...tls }, (res) => {
      const protocol = (res.socket as TLSSocket).getProtocol() ?? '';
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, protocol }));
    });
    req.on('error', reject).end();
  });
}

const adminAuth = { authorization: basicHeader(ADMIN.username, ADMIN.password) };

describe('the API over HTTPS ([api] cert_file, key_file)', () => {
  let svcd: TestServer;
  beforeAll(async () => {
    svcd = await startTestServer({
      store: 'file',
      api: { cert_file: certs.serverCert, key_file: certs.serverKey },
    });
  });
  afterAll(() => svcd.stop());

  test('GET /status answers over TLS 1.3 with the configured certificate; the API URL says https', async () => {
    expect(svcd.server.apiUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const reply = await httpsGet(`${svcd.server.apiUrl}/status`, adminAuth);
    expect(reply.status).toBe(200);
    expect(reply.protocol).toBe('TLSv1.3');
    expect(JSON.parse(reply.body).data.fingerprint).toBe(svcd.server.fingerprint);
  });

  test('a client that trusts another CA refuses the certificate', async () => {
    const other = await readFile(otherCa.caCert, 'utf8');
    await expect(httpsGet(`${svcd.server.apiUrl}/status`, adminAuth, { ca: other })).rejects.toMatchObject({
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
  });

  test('tls_min defaults to 1.3: a TLS 1.2 client is refused', async () => {
    await expect(
      httpsGet(`${svcd.server.apiUrl}/status`, adminAuth, { ca, maxVersion: 'TLSv1.2' }),
    ).rejects.toThrow(/protocol version|alert/i);
  });

  test('plain HTTP on the HTTPS port gets no API answer', async () => {
    const url = svcd.server.apiUrl?.replace('https:', 'http:') ?? '';
    const outcome = await new Promise<string>((resolve) => {
      const req = httpRequest(`${url}/status`, (res) => resolve(`status ${res.statusCode ?? 0}`));
      req.on('error', (err) => resolve(`error ${err.message}`)).end();
    });
    expect(outcome).toMatch(/^error /);
  });

  test('/ws/commands upgrades over wss and checks the login as on plain HTTP', async () => {
    const wsUrl = `${svcd.server.apiUrl?.replace('https:', 'wss:')}/ws/commands`;
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(wsUrl, { headers, ca });
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('error', reject);
      });
    expect(await status({ authorization: basicHeader(ADMIN.username, 'wrong-password') })).toBe(401);
    expect(await status(adminAuth)).toBe(101);
  });
});

describe('[api] tls_min = "1.2"', () => {
  test('accepts a TLS 1.2 client', async () => {
    const svcd = await startTestServer({
      store: 'static',
      api: { cert_file: certs.serverCert, key_file: certs.serverKey, tls_min: 1.2 },
    });
    try {
      const reply = await httpsGet(`${svcd.server.apiUrl}/status`, adminAuth, { ca, maxVersion: 'TLSv1.2' });
      expect(reply.status).toBe(200);
      expect(reply.protocol).toBe('TLSv1.2');
    } finally {
      await svcd.stop();
    }
  });
});

describe('TLS settings', () => {
  const parse = (api: string[], server: string[] = []) =>
    parseSvcdConfig(['[server]', ...server, '[api]', 'auth = "admin:secret-pass-1"', ...api].join('\n'));
  const problems = (api: string[], server: string[] = []) => {
    try {
      parse(api, server);
      return '';
    } catch (err) {
      return (err as ConfigError).message;
    }
  };

  test('a certificate needs its key and the other way round, on both listeners', () => {
    expect(problems(['cert_file = "a.crt"'])).toContain('[api] key_file: required when cert_file is set');
    expect(problems(['key_file = "a.key"'])).toContain('[api] cert_file: required when key_file is set');
    expect(problems([], ['tls_cert = "a.crt"'])).toContain('[server] tls_key: required when tls_cert is set');
  });

  test('tls_min is "1.2" or "1.3", as a string or a number; 1.3 by default', () => {
    expect(parse([]).api.tls_min).toBe('1.3');
    expect(parse([]).server.tls_min).toBe('1.3');
    expect(parse(['tls_min = 1.2']).api.tls_min).toBe('1.2');
    expect(parse([], ['tls_min = "1.2"']).server.tls_min).toBe('1.2');
    expect(problems(['tls_min = "1.1"'])).toContain('[api] tls_min: expected "1.2" or "1.3"');
  });

  test('relative certificate paths are taken from the config file folder', () => {
    const config = resolveConfigPaths(
      parse(
        ['cert_file = "tls/api.crt"', 'key_file = "tls/api.key"'],
        ['tls_cert = "a.crt"', 'tls_key = "a.key"'],
      ),
      '/etc/svcd/svcd.conf',
    );
    expect(config.api.cert_file).toBe('/etc/svcd/tls/api.crt');
    expect(config.api.key_file).toBe('/etc/svcd/tls/api.key');
    expect(config.server.tls_cert).toBe('/etc/svcd/a.crt');
    expect(config.server.tls_key).toBe('/etc/svcd/a.key');
  });
});

describe('a certificate that cannot be used stops the start with a message naming the key', () => {
  const start = async (api: Record<string, unknown>, server: Record<string, unknown> = {}) => {
    const dataDir = await mkdtemp(join(dir, 'data-'));
    const config = svcdConfigSchema.parse({
      server: { address: '127.0.0.1:0', data_dir: dataDir, ...server },
      api: { address: '127.0.0.1:0', auth: 'admin:secret-pass-1', ...api },
    });
    const running = await startServer(config, pino({ level: 'silent' }));
    await running.close();
  };

  test('a missing certificate file', async () => {
    const missing = join(dir, 'nope.crt');
    await expect(start({ cert_file: missing, key_file: certs.serverKey })).rejects.toThrow(
      new SettingError(`[api] cert_file: cannot read ${missing}: the file does not exist`),
    );
  });

  test('a key file that holds no key', async () => {
    await expect(start({ cert_file: certs.serverCert, key_file: certs.serverCert })).rejects.toThrow(
      /\[api\] key_file: .*server\.crt holds no PEM private key/,
    );
  });

  test('a key of another certificate', async () => {
    await expect(start({ cert_file: certs.serverCert, key_file: otherCa.serverKey })).rejects.toThrow(
      /\[api\] key_file: .*other-server\.key is not the private key of the certificate in .*api-server\.crt/,
    );
  });

  test('the agent listener names its own keys', async () => {
    const missing = join(dir, 'nope.key');
    await expect(start({}, { tls_cert: certs.serverCert, tls_key: missing })).rejects.toThrow(
      `[server] tls_key: cannot read ${missing}: the file does not exist`,
    );
  });
});
