import { AppError, ERROR_CODES } from '@svc/protocol';
import { clientNotFound } from '../clients/client-directory.js';
import type { MemberSet, ScopeMembers } from './ports.js';

/** Client ids named in a refusal of a run; the rest are counted. */
const NAMED_IN_REFUSAL = 20;

/**
 * The clients a user may see and act on (issue 28 §2): every client, or the members of the client groups their
 * user groups are limited to. The one check routes and services make: a single client outside the scope is
 * answered as unknown (404, so its existence does not leak); a run with a target outside it is refused whole.
 */
export class ClientScope {
  static readonly ALL = new ClientScope(undefined, []);

  private constructor(
    private readonly members: ScopeMembers | undefined,
    private readonly sets: readonly MemberSet[],
  ) {}

  /** Limited to the members of these sets (none: no client). */
  static limitedTo(members: ScopeMembers, sets: readonly MemberSet[]): ClientScope {
    return new ClientScope(members, sets);
  }

  get limited(): boolean {
    return this.members !== undefined;
  }

  has(id: string): boolean {
    if (!this.members) return true;
    for (const set of this.sets) if (set.has(id)) return true;
    return false;
  }

  /** The ids in scope, in `idsInOrder`'s order (the directory's); every id when not limited. */
  idsInOrder(idsInOrder: readonly string[]): readonly string[] {
    if (!this.members) return idsInOrder;
    const [first] = this.sets;
    if (!first) return [];
    if (this.sets.length === 1) return first.inOrder(idsInOrder);
    return this.members.unionInOrder(this.sets, idsInOrder);
  }

  /** 404 ERR_CLIENT_NOT_FOUND for a client outside the scope, as for an unknown one. */
  assertClient(id: string): void {
    if (!this.has(id)) throw clientNotFound(id);
  }

  /** 403 ERR_CLIENTS_OUT_OF_SCOPE naming the targets outside the scope; nothing is run (or saved) then. */
  assertTargets(ids: Iterable<string>, what: 'run' | 'schedule' = 'run'): void {
    if (!this.members) return;
    const outside: string[] = [];
    for (const id of ids) if (!this.has(id)) outside.push(id);
    if (outside.length === 0) return;
    const named = outside.slice(0, NAMED_IN_REFUSAL).join(', ');
    const more = outside.length > NAMED_IN_REFUSAL ? ` and ${outside.length - NAMED_IN_REFUSAL} more` : '';
    throw new AppError(
      'forbidden',
      ERROR_CODES.clientsOutOfScope,
      `The ${what} targets ${outside.length} client(s) outside your client scope: ${named}${more}`,
      `your user groups are limited to some client groups; nothing was ${what === 'run' ? 'run' : 'saved'}`,
    );
  }
}
