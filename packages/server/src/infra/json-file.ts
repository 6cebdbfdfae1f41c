import { chmod, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Reads and parses a JSON file named by a config key; errors say which key, which file and what is wrong. */
export async function readJsonFile(path: string, configKey: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`${configKey}: cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`${configKey}: ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Replaces a JSON file in one step (write a side file owner-only, then rename), so a crash or a concurrent
 * reader never sees half a file.
 */
export async function writeJsonFileAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  // writeFile's mode applies only to a new file; a leftover side file keeps its old mode otherwise.
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
};

/**
 * Removes the side files `<file>.<pid>.tmp` that writeJsonFileAtomic left behind when its process was killed
 * between writing and renaming. Only that exact pattern next to `path` is touched; the side file of another
 * process that still runs (e.g. `svcd user` writing right now) is kept. Returns the paths removed.
 */
export async function removeInterruptedWrites(path: string): Promise<string[]> {
  const folder = dirname(path);
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return []; // a missing folder is reported by whoever reads the file
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const pidText = name.slice(prefix.length, -'.tmp'.length);
    if (!/^[1-9]\d{0,9}$/.test(pidText)) continue;
    const pid = Number(pidText);
    if (pid !== process.pid && isRunning(pid)) continue;
    const leftover = join(folder, name);
    try {
      await unlink(leftover);
      removed.push(leftover);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}
