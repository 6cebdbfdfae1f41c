import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';

/** True for an existing regular file this process may execute. */
export async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Looks a program name up in a PATH value the way a shell does, trying each extension in turn (Windows: PATHEXT).
 * Relative PATH entries are skipped. The folder is canonicalised (symlinks resolved) but the file name is kept,
 * so `sh` found in a merged /bin comes back as /usr/bin/sh, not /usr/bin/dash.
 */
export async function findOnPath(
  name: string,
  pathValue: string | undefined,
  extensions: readonly string[] = [''],
): Promise<string | undefined> {
  for (const dir of (pathValue ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    for (const extension of extensions) {
      const file = name + extension;
      if (!(await isExecutableFile(join(dir, file)))) continue;
      const canonicalDir = await realpath(dir).catch(() => dir);
      return join(canonicalDir, file);
    }
  }
  return undefined;
}
