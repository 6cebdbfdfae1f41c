import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Files of a throwaway CA and a server certificate it signed, for localhost and 127.0.0.1. */
export interface TestCertificates {
  caCert: string;
  serverCert: string;
  serverKey: string;
}

/**
 * Makes a CA and a server certificate (EC P-256, valid one day) in `dir` with the system's openssl: Node 20
 * cannot create X.509 certificates itself. `name` prefixes the files, so several CAs can share a folder.
 */
export async function makeTestCertificates(dir: string, name = 'test'): Promise<TestCertificates> {
  const file = (suffix: string) => join(dir, `${name}-${suffix}`);
  const files = {
    caKey: file('ca.key'),
    caCert: file('ca.crt'),
    serverKey: file('server.key'),
    csr: file('server.csr'),
    serverCert: file('server.crt'),
    ext: file('server.ext'),
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const caSubject = `/CN=${name} test CA`;
  await openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    files.caKey,
    '-out',
    files.caCert,
    '-days',
    '1',
    '-subj',
    caSubject,
  ]);
  await openssl(['req', ...ec, '-keyout', files.serverKey, '-out', files.csr, '-subj', '/CN=localhost']);
  await writeFile(files.ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await openssl([
    'x509',
    '-req',
    '-in',
    files.csr,
    '-CA',
    files.caCert,
    '-CAkey',
    files.caKey,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    files.ext,
    '-out',
    files.serverCert,
  ]);
  return { caCert: files.caCert, serverCert: files.serverCert, serverKey: files.serverKey };
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (err) {
    throw new Error(
      `openssl ${args[0] ?? ''} failed (the TLS tests need the openssl command): ${String(err)}`,
    );
  }
}
