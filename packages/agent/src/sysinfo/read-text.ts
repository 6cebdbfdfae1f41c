import { readFile } from 'node:fs/promises';

/** The text of a file, or '' when it is missing or unreadable: facts are best effort and never fail. */
export async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return '';
  }
}
