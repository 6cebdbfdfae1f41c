/** Pieces every end-to-end test of svcd needs: an admin user file and a started svcd process. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hash } from '@node-rs/bcrypt';
import { SVCD_BIN, startProcess, type ProcessOptions, type RunningProcess } from './process.js';

export const E2E_ADMIN = { username: 'admin', password: 'admin-secret-1' };

/** `<dir>/users.json` with one member of Administrators; bcrypt cost 4 keeps logins fast in tests. */
export async function writeAdminUserFile(dir: string, admin = E2E_ADMIN): Promise<void> {
  const users = [
    {
      username: admin.username,
      password: await hash(admin.password, { cost: 4 }),
      groups: ['Administrators'],
    },
  ];
  await writeFile(join(dir, 'users.json'), JSON.stringify(users));
}

/** Starts svcd with a config file and resolves once its API listens. */
export async function startSvcdProcess(
  configPath: string,
  options?: ProcessOptions,
): Promise<RunningProcess> {
  const svcd = startProcess(SVCD_BIN, ['-c', configPath], options);
  await svcd.waitForLog('API listening');
  return svcd;
}
