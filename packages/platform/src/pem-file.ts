import { readFile } from 'node:fs/promises';
import { SettingError, readErrorReason } from './config-loader.js';

export type PemKind = 'certificate' | 'private key';

const PEM_LABEL: Record<PemKind, RegExp> = {
  certificate: /-----BEGIN CERTIFICATE-----/,
  'private key': /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/,
};

/**
 * Reads a PEM file named by a setting (e.g. `[api] cert_file`). A missing, unreadable or non-PEM file is a
 * ConfigError whose one problem names the setting and the path.
 */
export async function readPemFile(path: string, setting: string, kind: PemKind): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new SettingError(`${setting}: cannot read ${path}: ${readErrorReason(error)}`);
  }
  if (!PEM_LABEL[kind].test(text))
    throw new SettingError(`${setting}: ${path} holds no PEM ${kind} (-----BEGIN ... -----)`);
  return text;
}
