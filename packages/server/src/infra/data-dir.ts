import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export async function ensureDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
}

/**
 * Reads a secret kept in data_dir, creating it (mode 0600, random) the first time.
 * `wx` makes creation atomic, so two processes starting together end up with the same secret.
 */
export async function loadOrCreateSecret(
  dataDir: string,
  fileName: string,
  create: () => string,
): Promise<string> {
  const path = join(dataDir, fileName);
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    await writeFile(path, create() + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return (await readFile(path, 'utf8')).trim();
}

export const randomSecret = (): string => randomBytes(32).toString('base64url');
