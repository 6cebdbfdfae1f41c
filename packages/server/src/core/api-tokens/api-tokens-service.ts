import type { ApiTokenItem, CreateApiTokenBody, CreatedApiToken, UpdateApiTokenBody } from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { assertAdmin, type UserRecord } from '../users/user-store.js';
import { apiTokenErrors } from './api-token-errors.js';
import type { ApiTokenChanges, ApiTokenRecord, ApiTokenRepository } from './ports.js';
import { newTokenSecret } from './token-secret.js';

const DEFAULT_LIFETIME_MS = 365 * 24 * 3600_000;
/** A new prefix is drawn again when it clashes (about one in 2·10^14 per existing token). */
const PREFIX_ATTEMPTS = 3;

/** RFC 3339 in UTC; milliseconds only when there are some (creation times are whole seconds). */
const isoSeconds = (date: Date): string => date.toISOString().replace(/\.000Z$/, 'Z');

export const toItem = (token: ApiTokenRecord): ApiTokenItem => ({
  prefix: token.prefix,
  name: token.name,
  scope: token.scope,
  created_at: isoSeconds(token.createdAt),
  expires_at: isoSeconds(token.expiresAt),
  last_used_at: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
});

/** The caller's own personal API tokens (GET/POST /me/tokens, PUT/DELETE /me/tokens/{prefix}). */
export class ApiTokensService {
  constructor(
    private readonly tokens: ApiTokenRepository,
    private readonly clock: Clock,
  ) {}

  async list(caller: UserRecord): Promise<ApiTokenItem[]> {
    const tokens = await this.tokens.listOf(caller.username);
    return tokens
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.name.localeCompare(b.name))
      .map(toItem);
  }

  async create(caller: UserRecord, body: CreateApiTokenBody): Promise<CreatedApiToken> {
    if (body.scope === 'clients-auth') assertAdmin(caller, 'client credentials with an API token');
    // Whole seconds, so the times shown are the times stored.
    const now = new Date(Math.floor(this.clock.now().getTime() / 1000) * 1000);
    const expiresAt =
      body.expires_at === undefined
        ? new Date(now.getTime() + DEFAULT_LIFETIME_MS)
        : this.futureDate(body.expires_at);
    for (let attempt = 1; ; attempt++) {
      const secret = newTokenSecret();
      const record: ApiTokenRecord = {
        prefix: secret.prefix,
        username: caller.username,
        name: body.name,
        scope: body.scope,
        secretHash: secret.secretHash,
        createdAt: now,
        expiresAt,
      };
      const outcome = await this.tokens.insert(record);
      if (outcome === 'inserted') return { ...toItem(record), token: secret.token };
      if (attempt >= PREFIX_ATTEMPTS) throw apiTokenErrors.prefixTaken();
    }
  }

  async update(caller: UserRecord, prefix: string, body: UpdateApiTokenBody): Promise<ApiTokenItem> {
    if (body.name === undefined && body.expires_at === undefined) throw apiTokenErrors.nothingToChange();
    const changes: ApiTokenChanges = {
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.expires_at === undefined ? {} : { expiresAt: this.futureDate(body.expires_at) }),
    };
    const updated = await this.tokens.update(caller.username, prefix, changes);
    if (!updated) throw apiTokenErrors.notFound(prefix);
    return toItem(updated);
  }

  async delete(caller: UserRecord, prefix: string): Promise<void> {
    if (!(await this.tokens.delete(caller.username, prefix))) throw apiTokenErrors.notFound(prefix);
  }

  private futureDate(text: string): Date {
    const date = new Date(text);
    if (date.getTime() <= this.clock.now().getTime()) throw apiTokenErrors.expiresInPast(text);
    return date;
  }
}
