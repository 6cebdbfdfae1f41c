import { randomBytes } from 'node:crypto';
import {
  SAVED_VIEWS_PER_USER,
  type CreateSavedViewBody,
  type SavedView,
  type UpdateSavedViewBody,
} from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import type { UserRecord } from '../users/user-store.js';
import type { SavedViewRecord, SavedViewRepository } from './ports.js';
import { savedViewErrors } from './saved-view-errors.js';

/** A new id is drawn again when it clashes (72 random bits: practically never). */
const ID_ATTEMPTS = 3;
/** 12 URL-safe characters. */
const newViewId = (): string => randomBytes(9).toString('base64url');
const VIEW_ID = /^[A-Za-z0-9_-]{1,32}$/;

export const toSavedView = (view: SavedViewRecord): SavedView => ({
  id: view.id,
  name: view.name,
  page: view.page,
  search: view.search,
  columns: view.columns,
  sort: view.sort,
  created_at: view.createdAt.toISOString(),
  updated_at: view.updatedAt.toISOString(),
});

/** The caller's own saved views of console pages (GET/POST /me/views, GET/PUT/DELETE /me/views/{id}). */
export class SavedViewsService {
  constructor(
    private readonly views: SavedViewRepository,
    private readonly clock: Clock,
  ) {}

  async list(caller: UserRecord): Promise<SavedView[]> {
    const views = await this.views.listOf(caller.username);
    return views.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id)).map(toSavedView);
  }

  async get(caller: UserRecord, id: string): Promise<SavedView> {
    const view = VIEW_ID.test(id) ? await this.views.find(caller.username, id) : undefined;
    if (!view) throw savedViewErrors.notFound(id);
    return toSavedView(view);
  }

  async create(caller: UserRecord, body: CreateSavedViewBody): Promise<SavedView> {
    // Checked before the insert, so two creations at once can pass the limit by one: a soft cap.
    if ((await this.views.countOf(caller.username)) >= SAVED_VIEWS_PER_USER) throw savedViewErrors.tooMany();
    const now = this.clock.now();
    for (let attempt = 1; ; attempt++) {
      const record: SavedViewRecord = {
        id: newViewId(),
        username: caller.username,
        name: body.name,
        page: body.page,
        search: body.search,
        columns: body.columns,
        sort: body.sort,
        createdAt: now,
        updatedAt: now,
      };
      if ((await this.views.insert(record)) === 'inserted') return toSavedView(record);
      if (attempt >= ID_ATTEMPTS) throw savedViewErrors.idTaken();
    }
  }

  async update(caller: UserRecord, id: string, body: UpdateSavedViewBody): Promise<SavedView> {
    const { name, search, columns, sort } = body;
    if (name === undefined && search === undefined && columns === undefined && sort === undefined) {
      throw savedViewErrors.nothingToChange();
    }
    const updated = VIEW_ID.test(id)
      ? await this.views.update(caller.username, id, {
          ...(name === undefined ? {} : { name }),
          ...(search === undefined ? {} : { search }),
          ...(columns === undefined ? {} : { columns }),
          ...(sort === undefined ? {} : { sort }),
          updatedAt: this.clock.now(),
        })
      : undefined;
    if (!updated) throw savedViewErrors.notFound(id);
    return toSavedView(updated);
  }

  async delete(caller: UserRecord, id: string): Promise<void> {
    if (!VIEW_ID.test(id) || !(await this.views.delete(caller.username, id)))
      throw savedViewErrors.notFound(id);
  }
}
