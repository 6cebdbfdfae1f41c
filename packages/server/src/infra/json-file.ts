import { chmod, readFile, rename, writeFile } from 'node:fs/promises';

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
