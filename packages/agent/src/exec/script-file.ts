import { randomUUID } from 'node:crypto';
import { chmod, lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jobErrors } from './job-errors.js';

/** `<data_dir>/scripts`, where scripts are written before they run. */
export const scriptsDirOf = (dataDir: string): string => join(dataDir, 'scripts');

/** A new random path for a script file; nothing is created yet. */
export const newScriptPath = (dataDir: string, extension: string): string =>
  join(scriptsDirOf(dataDir), randomUUID() + extension);

/**
 * Makes sure the scripts folder exists, is a real folder (not a symlink) owned by this account, and is
 * accessible to this account only (0700, tightened when wider). Throws a `failed` job error otherwise.
 */
export async function prepareScriptsDir(dataDir: string): Promise<void> {
  const dir = scriptsDirOf(dataDir);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await lstat(dir);
    if (!info.isDirectory()) throw new Error('it is not a folder');
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid)
      throw new Error(`it belongs to uid ${info.uid}, not to this agent's account (uid ${uid})`);
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) await chmod(dir, 0o700);
  } catch (err) {
    throw jobErrors.failed(`cannot use the scripts folder ${dir}: ${(err as Error).message}`);
  }
}

/** Writes a new script file readable and writable only by this account; never overwrites an existing file. */
export async function writeScriptFile(path: string, content: Buffer): Promise<void> {
  try {
    await writeFile(path, content, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    // A partly written file is ours to remove; an existing one (EEXIST) never is.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') await removeScriptFile(path).catch(() => undefined);
    throw jobErrors.failed(`cannot write the script file ${path}: ${(err as Error).message}`);
  }
}

export async function removeScriptFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
