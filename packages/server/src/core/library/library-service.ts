import { randomUUID } from 'node:crypto';
import type {
  CreateLibraryScriptBody,
  LibraryRunRequest,
  LibraryScript,
  ListQuery,
  ReplaceLibraryScriptBody,
} from '@svc/protocol';
import type { Clock } from '../auth/ports.js';
import { libraryErrors } from './library-errors.js';
import type { LibraryScriptRepository } from './ports.js';

/** A library script ready to run: the fields of a script run request. */
export interface LibraryRun {
  script: string;
  interpreter: string;
  is_sudo: boolean;
  cwd: string;
  timeout_sec: number;
}

type OwnFields = Pick<LibraryScript, 'id' | 'created_by' | 'created_at' | 'updated_by' | 'updated_at'>;

/** A script with its fields in the order the API shows them. */
const withFields = (own: OwnFields, body: ReplaceLibraryScriptBody): LibraryScript => ({
  id: own.id,
  name: body.name,
  interpreter: body.interpreter,
  is_sudo: body.is_sudo,
  cwd: body.cwd,
  script: body.script,
  tags: body.tags,
  timeout_sec: body.timeout_sec,
  created_by: own.created_by,
  created_at: own.created_at,
  updated_by: own.updated_by,
  updated_at: own.updated_at,
});

/** The script library (spec 4.4): scripts kept by name for any authenticated user. */
export class LibraryService {
  constructor(
    private readonly repository: LibraryScriptRepository,
    private readonly clock: Clock,
  ) {}

  async create(body: CreateLibraryScriptBody, createdBy: string): Promise<LibraryScript> {
    const now = this.clock.now().toISOString();
    const script = withFields(
      { id: randomUUID(), created_by: createdBy, created_at: now, updated_by: createdBy, updated_at: now },
      body,
    );
    await this.repository.insert(script);
    return script;
  }

  async get(id: string): Promise<LibraryScript> {
    const script = await this.repository.get(id);
    if (!script) throw libraryErrors.scriptNotFound(id);
    return script;
  }

  /** A full replacement; id, created_by and created_at stay, updated_* become the caller and now. */
  async replace(id: string, body: ReplaceLibraryScriptBody, updatedBy: string): Promise<LibraryScript> {
    const current = await this.get(id);
    const next = withFields(
      { ...current, updated_by: updatedBy, updated_at: this.clock.now().toISOString() },
      body,
    );
    // Deleted in between: as unknown as if it had gone first.
    if (!(await this.repository.replace(next))) throw libraryErrors.scriptNotFound(id);
    return next;
  }

  /**
   * What running the library script `script_id` takes: its text as base64 (as a `script` field carries it) and
   * its own options, each overridden by the one the request gave.
   */
  async runOf(request: LibraryRunRequest): Promise<LibraryRun> {
    const stored = await this.repository.get(request.script_id);
    if (!stored) throw libraryErrors.unknownScriptId(request.script_id);
    return {
      script: Buffer.from(stored.script, 'utf8').toString('base64'),
      interpreter: request.interpreter ?? stored.interpreter,
      is_sudo: request.is_sudo ?? stored.is_sudo,
      cwd: request.cwd ?? stored.cwd,
      timeout_sec: request.timeout_sec ?? stored.timeout_sec,
    };
  }

  async delete(id: string): Promise<void> {
    if (!(await this.repository.delete(id))) throw libraryErrors.scriptNotFound(id);
  }

  list(query: ListQuery): Promise<{ data: LibraryScript[]; count: number }> {
    return this.repository.list(query);
  }
}
