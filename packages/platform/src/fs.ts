import { access } from 'node:fs/promises';

/** True when the path exists and is reachable (any type). */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
