import { AppError, ERROR_CODES, type ListQuery } from '@svc/protocol';
import { assertAdmin, type UserRecord } from '../users/user-store.js';
import type { ClientAuthStore, ClientConnections, ClientCredential } from './client-auth-store.js';

export interface ClientsAuthSettings {
  /** `[server] auth_write`: false makes every writing request 403. */
  writable: boolean;
}

const notFound = (id: string) =>
  new AppError('not_found', ERROR_CODES.clientAuthNotFound, `Client credential '${id}' not found`);

/** The /clients-auth rules (spec 4.13): Administrators only, file or table sources only, auth_write honoured. */
export class ClientsAuthService {
  constructor(
    /** Undefined when `[server]` names no credential source. */
    private readonly source: ClientAuthStore | undefined,
    private readonly connections: ClientConnections,
    private readonly settings: ClientsAuthSettings,
  ) {}

  async list(caller: UserRecord, query: ListQuery): Promise<{ data: ClientCredential[]; count: number }> {
    this.assertAllowed(caller);
    return this.store.list(query);
  }

  async get(caller: UserRecord, id: string): Promise<ClientCredential> {
    this.assertAllowed(caller);
    const credential = await this.store.get(id);
    if (!credential) throw notFound(id);
    return credential;
  }

  async create(caller: UserRecord, credential: ClientCredential): Promise<void> {
    this.assertAllowed(caller, 'write');
    await this.store.create(credential);
  }

  async delete(caller: UserRecord, id: string, force: boolean): Promise<void> {
    this.assertAllowed(caller, 'write');
    if (!(await this.store.get(id))) throw notFound(id);
    const inUse = this.connections.countByAuthId(id);
    if (inUse > 0 && !force) {
      throw new AppError(
        'conflict',
        ERROR_CODES.clientAuthInUse,
        `Client credential '${id}' is used by ${inUse} connected client(s)`,
        'disconnect them first, or delete with ?force=true to disconnect them',
      );
    }
    if (inUse > 0) await this.connections.disconnectByAuthId(id);
    if (!(await this.store.delete(id))) throw notFound(id);
  }

  /** Lets a route refuse a write (403 for auth_write = false) before it looks at the body. */
  assertMayWrite(caller: UserRecord): void {
    this.assertAllowed(caller, 'write');
  }

  private get store(): ClientAuthStore {
    if (!this.source) {
      throw new AppError(
        'invalid',
        ERROR_CODES.clientAuthNotConfigured,
        'No client credential source is configured',
        'set [server] auth_file or auth_table to manage client credentials',
      );
    }
    return this.source;
  }

  private assertAllowed(caller: UserRecord, access: 'read' | 'write' = 'read'): void {
    if (this.store.kind === 'static') {
      throw new AppError(
        'invalid',
        ERROR_CODES.clientAuthSingle,
        'Client credentials cannot be managed with a single static credential',
        'svcd runs with [server] auth = "id:password"; use [server] auth_file or auth_table to manage credentials',
      );
    }
    assertAdmin(caller, 'client credentials');
    if (access === 'write' && !this.settings.writable) {
      throw new AppError(
        'forbidden',
        ERROR_CODES.clientAuthReadOnly,
        'Client credentials are read-only',
        'svcd runs with [server] auth_write = false',
      );
    }
  }
}
