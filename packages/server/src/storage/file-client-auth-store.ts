import { z } from 'zod';
import { AppError, ERROR_CODES, applyListQuery } from '@svc/protocol';
import type { ClientAuthStore, ClientCredential } from '../core/clients-auth/client-auth-store.js';
import { readJsonFile, writeJsonFileAtomic } from '../infra/json-file.js';

const fileSchema = z.record(z.string().min(1).max(100), z.string().min(1).max(100));

async function readCredentialFile(path: string): Promise<Map<string, string>> {
  const json = await readJsonFile(path, '[server] auth_file');
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `[server] auth_file: ${path} must be a JSON object mapping client-auth ids to passwords ` +
        `(each 1 to 100 characters): ${parsed.error.issues.map((i) => i.path.join('.') || i.message).join('; ')}`,
    );
  }
  return new Map(Object.entries(parsed.data));
}

/**
 * `[server] auth_file`: a JSON object id → password, read at start. API changes apply at once and are written
 * back to the file (atomically, one write at a time).
 */
export class FileClientAuthStore implements ClientAuthStore {
  readonly kind = 'file';
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly path: string,
    private credentials: Map<string, string>,
  ) {}

  static async open(path: string): Promise<FileClientAuthStore> {
    return new FileClientAuthStore(path, await readCredentialFile(path));
  }

  get(id: string): Promise<ClientCredential | undefined> {
    const password = this.credentials.get(id);
    return Promise.resolve(password === undefined ? undefined : { id, password });
  }

  list(query: Parameters<ClientAuthStore['list']>[0]) {
    const all = [...this.credentials].map(([id, password]) => ({ id, password }));
    return Promise.resolve(applyListQuery(all, query) as { data: ClientCredential[]; count: number });
  }

  create(credential: ClientCredential): Promise<void> {
    return this.change((next) => {
      if (next.has(credential.id)) {
        throw new AppError(
          'conflict',
          ERROR_CODES.clientAuthExists,
          `Client credential '${credential.id}' already exists`,
        );
      }
      next.set(credential.id, credential.password);
      return true;
    }).then(() => undefined);
  }

  delete(id: string): Promise<boolean> {
    return this.change((next) => next.delete(id));
  }

  private change(apply: (next: Map<string, string>) => boolean): Promise<boolean> {
    const run = this.queue.then(async () => {
      const next = new Map(this.credentials);
      if (!apply(next)) return false;
      await writeJsonFileAtomic(this.path, Object.fromEntries(next));
      this.credentials = next;
      return true;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
