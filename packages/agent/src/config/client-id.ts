import { randomUUID } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const CLIENT_ID_FILE = 'client-id';

async function readId(path: string): Promise<string | undefined> {
  try {
    const id = (await readFile(path, 'utf8')).trim();
    if (id === '') throw new Error(`${path} is empty; delete it to generate a new client id`);
    return id;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The client id generated on the first start and kept in `<dataDir>/client-id` (mode 0600), so the agent
 * keeps its identity across restarts. The file appears complete or not at all (written aside, then hard-linked
 * into place, which fails if it exists), so two agents starting together agree on one id.
 */
export async function loadOrCreateClientId(dataDir: string): Promise<string> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, CLIENT_ID_FILE);
  const existing = await readId(path);
  if (existing !== undefined) return existing;
  const draft = `${path}.${process.pid}.${randomUUID()}`;
  try {
    await writeFile(draft, `${randomUUID()}\n`, { mode: 0o600, flag: 'wx' });
    await link(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await rm(draft, { force: true });
  }
  const id = await readId(path);
  if (id === undefined) throw new Error(`could not create ${path}`);
  return id;
}
