import { X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureVersion } from 'node:tls';
import { SettingError, readPemFile } from '@svc/platform';

/** Certificate, key and oldest protocol version of a listener that speaks TLS. */
export interface ListenerTls {
  cert: string;
  key: string;
  minVersion: SecureVersion;
  /** For the start-up log line. */
  subject: string;
  validTo: Date;
}

/** The settings naming a listener's files, e.g. `[api] cert_file`, in messages. */
export interface TlsSettingNames {
  cert: string;
  key: string;
}

export interface TlsFiles {
  certFile: string | undefined;
  keyFile: string | undefined;
  min: '1.2' | '1.3';
}

/**
 * Reads a listener's certificate and key; undefined when none are configured (plain HTTP). Every problem (missing
 * or unreadable file, not PEM, key not matching the certificate) is a ConfigError naming the setting.
 */
export async function loadListenerTls(
  files: TlsFiles,
  names: TlsSettingNames,
): Promise<ListenerTls | undefined> {
  if (!files.certFile || !files.keyFile) return undefined;
  const cert = await readPemFile(files.certFile, names.cert, 'certificate');
  const key = await readPemFile(files.keyFile, names.key, 'private key');
  const minVersion: SecureVersion = files.min === '1.2' ? 'TLSv1.2' : 'TLSv1.3';
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new SettingError(`${names.cert}: ${files.certFile} is not a valid certificate: ${messageOf(err)}`);
  }
  try {
    createSecureContext({ cert, key, minVersion });
  } catch (err) {
    const message = messageOf(err);
    if (/key values mismatch/i.test(message))
      throw new SettingError(
        `${names.key}: ${files.keyFile} is not the private key of the certificate in ${files.certFile} (${names.cert})`,
      );
    throw new SettingError(`${names.cert} / ${names.key}: cannot use them for TLS: ${message}`);
  }
  return {
    cert,
    key,
    minVersion,
    subject: leaf.subject.replace(/\n/g, ', '),
    validTo: new Date(leaf.validTo),
  };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
